//go:build race

package store_test

// raceDetector tells whether the tests run under the race detector, which makes every
// transaction several times slower than the machine otherwise runs it: a test that a crowd the
// pool serves in time is queued asserts it only without it (the race run checks the same code
// for data races, not for its pace).
const raceDetector = true
