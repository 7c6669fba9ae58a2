package httpapi

import (
	"strings"
	"testing"

	"github.com/narad/narad/io/statusui"
)

// TestEveryRouteIsReached checks that match leads a path of each row of routeTable to
// that row's route (buildRoutes already panics on a row no slot of match holds).
func TestEveryRouteIsReached(t *testing.T) {
	s := New(newFakeBroker(), Options{Logger: discardLogger()})
	fill := strings.NewReplacer("{topic}", "orders", "{name}", "app", "{id}", "2", "{partition}", "1")
	for _, r := range Routes() {
		p, _ := s.match(fill.Replace(r.Path))
		if p == nil {
			t.Errorf("%s %s: no pattern matches %s", r.Method, r.Path, fill.Replace(r.Path))
			continue
		}
		rt := p.methods[r.Method]
		if want := r.Method + " " + r.Path; rt == nil || rt.rm.label != want {
			t.Errorf("%s: matched %v", want, rt)
		}
		described := isV1(r.Path) || r.Path == "/metrics" || r.Path == "/healthz" || r.Path == "/readyz"
		if len(r.Statuses) == 0 || !described && r.Path != statusui.Path && r.Path != statusui.PathNoSlash {
			t.Errorf("%s %s: statuses %v", r.Method, r.Path, r.Statuses)
		}
	}
}
