package store

import (
	"testing"
	"time"
)

func TestPageCache_KeepsOnlyWhatNoWriteOverlapped(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := newPageCache[string, string](10, time.Hour)
	hit := func(k string) (string, bool) {
		p, ok, _ := c.start(k, now)
		return p, ok
	}

	_, _, seq := c.start("a1", now)
	c.keep("a1", "a", seq, time.Now(), time.Time{}, 1, "page a1")
	if p, ok := hit("a1"); !ok || p != "page a1" {
		t.Fatalf("a kept page is not served: %q %v", p, ok)
	}

	// A read of scope a that a write to a overlaps is not kept; one to b does not matter.
	_, _, seq = c.start("a2", now)
	_, _, seqB := c.start("b1", now)
	c.invalidate("a")
	c.keep("a2", "a", seq, time.Now(), time.Time{}, 1, "page a2")
	c.keep("b1", "b", seqB, time.Now(), time.Time{}, 1, "page b1")
	if _, ok := hit("a2"); ok {
		t.Error("a page read across a write to its scope was kept")
	}
	if _, ok := hit("a1"); ok {
		t.Error("a page of a scope written since is still served")
	}
	if _, ok := hit("b1"); !ok {
		t.Error("a write to scope a ended a page of scope b")
	}

	// A page ends when a listing on it expires, on the store's clock.
	_, _, seq = c.start("a3", now)
	c.keep("a3", "a", seq, time.Now(), now.Add(time.Minute), 1, "page a3")
	if _, ok, _ := c.start("a3", now.Add(59*time.Second)); !ok {
		t.Error("a page ended before its listing expired")
	}
	if _, ok, _ := c.start("a3", now.Add(time.Minute)); ok {
		t.Error("a page is served once its listing expired")
	}

	// Full: starting over voids every page, and reads begun before it are not kept.
	_, _, seq = c.start("a4", now)
	c.keep("big", "b", seq, time.Now(), time.Time{}, 10, "big page")
	if _, ok := hit("b1"); ok {
		t.Error("a page survived the cache starting over")
	}
	if _, ok := hit("big"); !ok {
		t.Error("the page that filled the cache is not served")
	}
	c.invalidateAll()
	if _, ok := hit("big"); ok {
		t.Error("a page survived invalidateAll")
	}
	c.keep("a4", "a", seq, time.Now(), time.Time{}, 1, "page a4")
	if _, ok := hit("a4"); ok {
		t.Error("a read begun before invalidateAll was kept")
	}
}

func TestPageCache_EndsAtItsTTLAndIsOffBelowZero(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := newPageCache[string, string](10, time.Hour)
	_, _, seq := c.start("k", now)
	c.keep("k", "", seq, time.Now().Add(-2*time.Hour), time.Time{}, 1, "old")
	if _, ok, _ := c.start("k", now); ok {
		t.Error("a page older than the TTL is served")
	}
	off := newPageCache[string, string](10, -1)
	_, _, seq = off.start("k", now)
	off.keep("k", "", seq, time.Now(), time.Time{}, 1, "page")
	off.keepHorizon("", seq, time.Now(), time.Time{})
	if _, ok, _ := off.start("k", now); ok {
		t.Error("a cache with a negative TTL serves pages")
	}
	if _, ok := off.horizon("", now); ok {
		t.Error("a cache with a negative TTL serves horizons")
	}
}
