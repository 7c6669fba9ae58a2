package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The operations kit of ops/: the Prometheus rules and the Grafana dashboard.
const (
	alertRulesFile = "../../ops/prometheus/narad-alerts.yml"
	dashboardFile  = "../../ops/grafana/narad.json"
	runbookFile    = "../../ops/RUNBOOK.md"
)

// alertRules is the part of a Prometheus rule file the test reads.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// TestOpsKitNamesExportedMetrics scrapes a real node and fails when an expression of the
// alert rules or of the dashboard names a narad_ metric it does not export: a metric
// renamed in the code, or a typo in the kit, would otherwise leave a panel empty and an
// alert that can never fire. Every alert must also have its runbook line and section.
func TestOpsKitNamesExportedMetrics(t *testing.T) {
	d := startDaemon(t, t.TempDir(), nil, nil)
	// Labelled families have no series until their first sample: a topic's counters,
	// the members once the node has joined its own metastore.
	d.createTopic(`{"name":"ops","partitions":1}`)
	d.produceCommitted("ops", "m", 1)
	d.consumeOne("ops", "wait=1s")
	var scrape string
	eventually(t, startBound, "the node lists itself alive in /metrics", func() bool {
		scrape = string(d.expect(http.StatusOK, http.MethodGet, "/metrics", nil, nil).body)
		return strings.Contains(scrape, `narad_cluster_members{status="alive"} 1`)
	})
	families := exportedFamilies(scrape)
	exprs := map[string][]string{alertRulesFile: ruleExprs(t), dashboardFile: dashboardExprs(t)}
	for file, list := range exprs {
		named := 0
		for _, expr := range list {
			for _, name := range promqlMetricNames(expr) {
				named++
				if !exportedName(families, name) {
					t.Errorf("%s names %s, which a node does not export, in %s", file, name, expr)
				}
			}
		}
		if named < 10 {
			t.Errorf("%s: only %d narad_ metrics named in %d expressions: is it read right?", file, named, len(list))
		}
	}
}

// exportedFamilies maps each metric family of a text-format scrape to its type.
func exportedFamilies(scrape string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(scrape, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			out[f[2]] = f[3]
		}
	}
	return out
}

// exportedName reports whether name is a family of the scrape, or one of the series a
// histogram or summary family makes (_bucket of a histogram, _sum and _count of both).
func exportedName(families map[string]string, name string) bool {
	if _, ok := families[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		switch typ := families[base]; {
		case !ok:
		case typ == "histogram", typ == "summary" && suffix != "_bucket":
			return true
		}
	}
	return false
}

var (
	// promqlStrings are PromQL's string literals (label values, regular expressions):
	// a metric's name is never in one, but a label value could look like one.
	promqlStrings = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	// promqlIdents are PromQL identifiers: metric, label and function names, keywords.
	promqlIdents = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
)

// promqlMetricNames lists the narad_ metric names of a PromQL expression: the identifiers
// outside string literals that start with narad_. No label of Narad's starts so, and a
// Grafana variable ($job, $__rate_interval) is an identifier after a '$' that does not.
func promqlMetricNames(expr string) []string {
	var names []string
	for _, id := range promqlIdents.FindAllString(promqlStrings.ReplaceAllString(expr, `""`), -1) {
		if strings.HasPrefix(id, "narad_") && !slices.Contains(names, id) {
			names = append(names, id)
		}
	}
	return names
}

// readKitFile reads a file of the kit and, given decode, decodes it into v.
func readKitFile(t *testing.T, path string, decode func([]byte, any) error, v any) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if decode != nil {
		if err := decode(b, v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return b
}

// ruleExprs reads the alert rules' expressions, and checks that each alert has a runbook
// annotation and a section of ops/RUNBOOK.md under its name.
func ruleExprs(t *testing.T) []string {
	t.Helper()
	var rules alertRules
	readKitFile(t, alertRulesFile, yaml.Unmarshal, &rules)
	runbook := readKitFile(t, runbookFile, nil, nil)
	var exprs []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
			if r.Alert == "" {
				continue
			}
			anchor := "ops/RUNBOOK.md#" + strings.ToLower(r.Alert)
			if rb := r.Annotations["runbook"]; !strings.HasSuffix(rb, anchor) || len(rb) == len(anchor) {
				t.Errorf("alert %s: runbook annotation %q, want a first step and %s", r.Alert, rb, anchor)
			}
			if !strings.Contains(string(runbook), "\n## "+r.Alert+"\n") {
				t.Errorf("alert %s has no section in %s", r.Alert, runbookFile)
			}
		}
	}
	return exprs
}

// dashboardExprs reads the dashboard's queries: every "expr" of a panel's targets (rows'
// nested panels included) and the template variables' queries.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	return dashboardStrings(t, "expr", "query", "definition")
}

// dashboardStrings lists the dashboard's strings held under one of keys, at any depth.
func dashboardStrings(t *testing.T, keys ...string) []string {
	t.Helper()
	var dash any
	readKitFile(t, dashboardFile, json.Unmarshal, &dash)
	var exprs []string
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(e, k)
			}
		case []any:
			for _, e := range x {
				walk(e, key)
			}
		case string:
			if slices.Contains(keys, key) {
				exprs = append(exprs, x)
			}
		}
	}
	walk(dash, "")
	return exprs
}

// The name extraction and the histogram suffixes, on expressions written to trip them.
func TestPromqlMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`rate(narad_a_total{route="narad_not_a_metric",x=~'narad_nor'}[$__rate_interval])`: {"narad_a_total"},
		`histogram_quantile(0.99, sum by (le) (rate(narad_h_seconds_bucket[5m]))) > 1e-3`:  {"narad_h_seconds_bucket"},
		`x_narad_y / narad_g and on(instance) narad_g`:                                     {"narad_g"},
	} {
		if got := promqlMetricNames(expr); !slices.Equal(got, want) {
			t.Errorf("%s: names %q, want %q", expr, got, want)
		}
	}
	families := map[string]string{"narad_h_seconds": "histogram", "narad_s": "summary", "narad_c_total": "counter"}
	for name, want := range map[string]bool{"narad_h_seconds_bucket": true, "narad_h_seconds_count": true,
		"narad_s_sum": true, "narad_s_bucket": false, "narad_c_total": true, "narad_c_total_count": false, "narad_h": false} {
		if got := exportedName(families, name); got != want {
			t.Errorf("exportedName(%s) = %v, want %v", name, got, want)
		}
	}
}

// TestDashboardQueriesParse has promtool parse every panel query of the dashboard (as the
// expressions of recording rules, Grafana's interval variables given a value): a PromQL
// syntax error would otherwise show only as a broken panel. make ops-check runs it with
// NARAD_OPS_CHECK=1, which makes a missing promtool a failure rather than a skip.
func TestDashboardQueriesParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("NARAD_OPS_CHECK") != "" {
			t.Fatalf("no promtool (apt-get install prometheus): %v", err)
		}
		t.Skip("no promtool; make ops-check runs this test")
	}
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	interval := regexp.MustCompile(`\$__[a-z_]+`) // $__rate_interval, $__interval, $__range
	for i, expr := range dashboardStrings(t, "expr") {
		rules = append(rules, rule{Record: fmt.Sprintf("narad:dashboard_query:%d", i), Expr: interval.ReplaceAllString(expr, "5m")})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules of the dashboard's %d queries: %v\n%s", len(rules), err, out)
	}
}
