package main

import (
	"strconv"
	"sync"
)

// ownWrites remembers the resourceVersion of this process's last write to each object
// until the informer has shown that version or a later one: a reconcile that acted on an
// older cached copy could bind a claim twice, or take a Pod it already took (the example's
// has_seen_own_write). resourceVersions are compared as the integers kube-apiserver
// makes them; one that is not an integer is only ever equal to itself.
type ownWrites struct {
	mu      sync.Mutex
	written map[string]string // key -> resourceVersion written
}

func newOwnWrites() *ownWrites { return &ownWrites{written: map[string]string{}} }

// wrote records a write of key that the API server answered with resourceVersion rv.
func (o *ownWrites) wrote(key, rv string) {
	o.mu.Lock()
	o.written[key] = rv
	o.mu.Unlock()
}

// seen reports whether the cached copy at resourceVersion cached is at least as new as
// this process's last write of key, and forgets the write once it is.
func (o *ownWrites) seen(key, cached string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	want, ok := o.written[key]
	if !ok || cached == want || newer(cached, want) {
		delete(o.written, key)
		return true
	}
	return false
}

// forget drops key (its object was deleted).
func (o *ownWrites) forget(key string) {
	o.mu.Lock()
	delete(o.written, key)
	o.mu.Unlock()
}

func newer(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x > y
}

// reservations are the Pods a worker is trying to take right now: another worker skips
// them and tries its next candidate, so two workers of one process never race for one Pod.
type reservations struct {
	mu   sync.Mutex
	held map[string]struct{}
}

func newReservations() *reservations { return &reservations{held: map[string]struct{}{}} }

// hold reserves key; false if another worker holds it.
func (r *reservations) hold(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, taken := r.held[key]; taken {
		return false
	}
	r.held[key] = struct{}{}
	return true
}

func (r *reservations) release(key string) {
	r.mu.Lock()
	delete(r.held, key)
	r.mu.Unlock()
}
