package store

import "testing"

// A session's watchers hear of every change the cache learns of it (a write here, another
// instance's notification) and of a gap in listening, which may hide a change to any session;
// not of other sessions' changes. Signals not yet received stand for any number.
func TestWatchSession_HearsOfItsSessionsChangesAndOfGaps(t *testing.T) {
	c := newSessionCache()
	changed, stop := c.watch("s1")
	heard := func() bool {
		select {
		case <-changed:
			return true
		default:
			return false
		}
	}
	for _, tc := range []struct {
		name   string
		change func()
		want   bool
	}{
		{"its rotation or logout here", func() { c.endWrite("s1", &sessionState{partyID: "p"}) }, true},
		{"another instance's notification of it", func() { c.forget("s1") }, true},
		{"a gap in listening", func() { c.forget("") }, true},
		{"another session's change", func() { c.endWrite("s2", nil); c.forget("s2") }, false},
		{"two changes at once", func() { c.forget("s1"); c.forget("s1") }, true},
	} {
		tc.change()
		if got := heard(); got != tc.want {
			t.Errorf("%s: heard %v, want %v", tc.name, got, tc.want)
		}
		if heard() {
			t.Errorf("%s: heard twice", tc.name)
		}
	}
	stop()
	c.forget("s1")
	if heard() {
		t.Error("a stopped watch heard a change")
	}
	if len(c.watchers) != 0 {
		t.Errorf("watchers left after stop: %v", c.watchers)
	}
}
