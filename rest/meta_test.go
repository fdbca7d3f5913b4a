package rest

import (
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

func TestAccepts_TheMostSpecificMatchingRangeDecides(t *testing.T) {
	cases := []struct {
		accept []string
		want   bool
	}{
		{nil, true},
		{[]string{""}, true},
		{[]string{"*/*"}, true},
		{[]string{"application/json"}, true},
		{[]string{"Application/JSON"}, true},
		{[]string{"application/*"}, true},
		{[]string{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}, true}, // a browser
		{[]string{"text/html", "*/*;q=0.1"}, true},                                          // two header lines
		{[]string{"application/json; charset=utf-8"}, true},
		{[]string{"text/html"}, false},
		{[]string{"text/*"}, false},
		{[]string{"application/json;q=0"}, false},
		{[]string{"application/json;q=0, */*"}, false}, // the exact range refuses, whatever */* says
		{[]string{"*/*;q=0"}, false},
		{[]string{"application/*;q=0, */*"}, false},
		{[]string{"application/*;q=0, application/json"}, true},
		{[]string{"application/json-seq"}, false},
		{[]string{"garbage"}, false},
	}
	for _, c := range cases {
		if got := accepts(c.accept, "application/json"); got != c.want {
			t.Errorf("Accept %q admits application/json: %v, want %v", c.accept, got, c.want)
		}
	}
}

// The health, readiness, document and key endpoints answer one media type each; a client
// whose Accept rules it out gets 406 in the problem shape, any other gets the body.
func TestMeta_AnAcceptThatRulesOutTheBodyIs406(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		doc := openAPIResponseChecker{t: t, doc: openAPIKinDoc(t)}
		for path, served := range map[string]string{
			"/healthz":               "application/json",
			"/readyz":                "application/json",
			"/openapi.yaml":          "application/yaml",
			"/.well-known/jwks.json": "application/json",
		} {
			r := a.do("GET", path, nil, withHeader("Accept", "text/html"))
			wantProblemShape(t, r, 406, store.CodeNotAcceptable)
			wantDetailMentions(t, r, served)
			doc.check("GET", path, r)
			for _, accept := range []string{"", "*/*", served, "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"} {
				var opts []reqOption
				if accept != "" {
					opts = append(opts, withHeader("Accept", accept))
				}
				r := a.do("GET", path, nil, opts...).ok(t)
				doc.check("GET", path, r)
				if ct := r.header.Get("Content-Type"); ct != served {
					t.Errorf("GET %s with Accept %q: Content-Type %q, want %q", path, accept, ct, served)
				}
			}
		}
	})
}

// With MARKETD_METRICS_ADDR set, the metrics are served on that address only: on the API's
// address /metrics is an unknown endpoint.
func TestMetrics_ServedElsewhereIs404OnTheAPI(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, func(_ *store.Config, rc *Config) { rc.MetricsElsewhere = true })
		r := a.do("GET", "/metrics", nil)
		wantProblemShape(t, r, 404, store.CodeNotFound)
		openAPIResponseChecker{t: t, doc: openAPIKinDoc(t)}.check("GET", "/metrics", r)
	})
}
