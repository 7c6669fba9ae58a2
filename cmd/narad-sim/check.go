package main

import (
	"regexp"
	"strings"
)

// checkPattern matches the check a violation names first: every simulator starts a
// violation's text (after its "t=<ns>ns: " time) with the check that found it.
var checkPattern = regexp.MustCompile(`^(invariant [0-9]+|linearizability|liveness|vacuous|dispatch|protocol|access|readiness|reclaim|poison|nospace|voters|forget|decommission|moves)\b`)

// checkName is the name of the check that reported err, as printed on the verdict line
// ("invariant-9", "linearizability"), or "unnamed" when the text names none: the
// mutation harness counts a planted bug as caught only by the check it names.
func checkName(err error) string {
	s := err.Error()
	for strings.HasPrefix(s, "t=") {
		_, rest, ok := strings.Cut(s, ": ")
		if !ok {
			break
		}
		s = rest
	}
	m := checkPattern.FindString(s)
	if m == "" {
		return "unnamed"
	}
	return strings.ReplaceAll(m, " ", "-")
}
