package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// The config file of serve (-config FILE, or NARAD_CONFIG): TOML whose keys are serve's
// flag names, as in docs/narad.example.toml:
//
//	data = "/var/lib/narad"
//	addr = "10.0.0.1:7942"
//	produce-inflight-max = 256
//	peers = ["1=10.0.0.1:7942", "2=10.0.0.2:7942", "3=10.0.0.3:7942"]
//
// A setting is taken from the first of: the flag on the command line, its environment
// variable (set and not empty), the file, the default. The file's values go through the
// same checks as the flags' (they are handed to the flag set as text), so a value the file
// may hold is exactly one the flag accepts. A key that names no flag, and a value of the
// wrong TOML type, are errors naming the key: a misspelt key silently ignored would leave
// a setting at its default without anyone noticing.

// configFlag is the flag that names the file; it is not a key of the file.
const configFlag = "config"

// configIntKeys are the keys whose flags take an integer: the file gives them as TOML
// integers. Every other key is a string, but for the bool flags (a TOML boolean) and
// peers (a string, or an array of "ID=HOST:PORT" strings).
var configIntKeys = []string{"id", "produce-inflight-max"}

// envName is the environment variable of serve's flag name: NARAD_ and the name in upper
// case with '_' for '-' (log-level: NARAD_LOG_LEVEL).
func envName(flagName string) string {
	return "NARAD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyConfigFile reads the TOML file at path (nothing when path is "") and sets, for each
// of its keys, the flag of that name unless the command line gave the flag or its
// environment variable is set.
func applyConfigFile(fs *flag.FlagSet, path string) error {
	if path == "" {
		return nil
	}
	values, err := readConfigFile(fs, path)
	if err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, key := range slices.Sorted(maps.Keys(values)) {
		if given[key] || os.Getenv(envName(key)) != "" {
			continue
		}
		if err := fs.Set(key, values[key]); err != nil {
			return fmt.Errorf("config file %s: key %q: %v", path, key, err)
		}
	}
	return nil
}

// readConfigFile decodes the file and returns each key's value as the text its flag
// parses. Unknown keys and wrong types are errors that name the key and the file.
func readConfigFile(fs *flag.FlagSet, path string) (map[string]string, error) {
	var raw map[string]any
	if _, err := toml.DecodeFile(path, &raw); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	values := make(map[string]string, len(raw))
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		f := fs.Lookup(key)
		if f == nil || key == configFlag {
			return nil, fmt.Errorf("config file %s: unknown key %q (the keys are serve's flag names: %s)",
				path, key, strings.Join(configKeys(fs), ", "))
		}
		text, want, ok := configValueText(f, raw[key])
		if !ok {
			return nil, fmt.Errorf("config file %s: key %q must be %s, not %s", path, key, want, tomlTypeName(raw[key]))
		}
		values[key] = text
	}
	return values, nil
}

// configValueText turns the TOML value v of flag f's key into the flag's text. When v has
// the wrong type it reports false and the type wanted.
func configValueText(f *flag.Flag, v any) (text, want string, ok bool) {
	if b, isBool := f.Value.(interface{ IsBoolFlag() bool }); isBool && b.IsBoolFlag() {
		x, ok := v.(bool)
		return strconv.FormatBool(x), "a boolean (true or false)", ok
	}
	if slices.Contains(configIntKeys, f.Name) {
		x, ok := v.(int64)
		return strconv.FormatInt(x, 10), "an integer", ok
	}
	if f.Name == "peers" {
		if list, isList := v.([]any); isList {
			return joinStrings(list)
		}
		x, ok := v.(string)
		return x, "a string or an array of strings", ok
	}
	x, ok := v.(string)
	return x, "a string", ok
}

// joinStrings joins an array of strings with commas, as -peers takes them.
func joinStrings(list []any) (text, want string, ok bool) {
	want = "a string or an array of strings"
	parts := make([]string, len(list))
	for i, e := range list {
		s, isString := e.(string)
		if !isString {
			return "", want, false
		}
		parts[i] = s
	}
	return strings.Join(parts, ","), want, true
}

// tomlTypeName names the TOML type of a decoded value, for errors.
func tomlTypeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("a %T", v)
}

// configKeys lists the keys a config file may hold: every serve flag but -config.
func configKeys(fs *flag.FlagSet) []string {
	var keys []string
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != configFlag {
			keys = append(keys, f.Name)
		}
	})
	return keys
}
