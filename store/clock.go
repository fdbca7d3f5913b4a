package store

import "time"

// Clock tells the store what time it is. Tests inject a fake; nothing in the domain calls
// time.Now directly.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

func (SystemClock) Now() time.Time { return time.Now() }

// now reads the store's clock at the precision the store keeps (microseconds), so a time
// written and read back compares equal to the one in memory.
func (s *Store) now() time.Time {
	return s.clock.Now().UTC().Truncate(time.Microsecond)
}

// Now is the store's clock, for front doors that need the same time the store uses.
func (s *Store) Now() time.Time { return s.now() }
