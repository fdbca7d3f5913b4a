package store

import "testing"

// A notification ends what an instance keeps only when another instance of the same store
// sent it: its sender dropped its own pages as it committed, and a store in another schema of
// the database (another deployment, or another test) shares the channel but not the data.
func TestNotifications_MatterFromOtherInstancesOfTheSameStoreOnly(t *testing.T) {
	a := &Store{origin: newOrigin(), schema: "market"}
	b := &Store{origin: newOrigin(), schema: "market"}
	other := &Store{origin: newOrigin(), schema: "t_0123"}
	spaced := &Store{origin: newOrigin(), schema: "my market"}
	for _, c := range []struct {
		name    string
		to      *Store
		payload string
		want    bool
	}{
		{"another instance of the store", a, b.payload("col-1"), true},
		{"its own", a, a.payload("col-1"), false},
		{"another store's instance", a, other.payload("col-1"), false},
		{"another instance, schema with a space", &Store{origin: newOrigin(), schema: "my market"}, spaced.payload("col-1"), true},
		{"an instance that names nothing", a, "col-1", true},
	} {
		id, ok := c.to.fromOthers(c.payload)
		if ok != c.want || (ok && id != "col-1") {
			t.Errorf("%s: %q gives (%q, %v), want col-1 %v", c.name, c.payload, id, ok, c.want)
		}
	}
}
