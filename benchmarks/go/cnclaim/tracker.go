package main

import (
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// bindablePods keeps, per (namespace, pool), the bindable Pods (Idle, unclaimed, Running,
// not being deleted) sorted oldest first, and who held each last: the example's tracker
// (examples/cnclaim/bindable.py), fed by the Pod informer's events, so that picking a
// candidate costs O(candidates) and not a sort of the pool per claim.
//
// Invariant: a Pod is listed exactly when its last event showed it bindable in that pool.
type bindablePods struct {
	mu        sync.Mutex
	sorted    map[poolKey][]podOrder
	lastOwner map[poolKey]map[string]map[string]struct{} // claim -> Pod names
	entries   map[string]trackedPod                      // namespace/name -> where it is
}

type poolKey struct{ namespace, pool string }

// podOrder sorts oldest first: creationTimestamp (to the second), then name.
type podOrder struct{ created, name string }

func (a podOrder) less(b podOrder) bool {
	return a.created < b.created || a.created == b.created && a.name < b.name
}

type trackedPod struct {
	pool  string
	order podOrder
	owner string
}

func newBindablePods() *bindablePods {
	return &bindablePods{sorted: map[poolKey][]podOrder{},
		lastOwner: map[poolKey]map[string]map[string]struct{}{}, entries: map[string]trackedPod{}}
}

func bindable(pod *corev1.Pod) bool {
	return pod.Labels[phaseLabel] == "Idle" && pod.Labels[claimedByLabel] == "" &&
		pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning
}

func creationOrder(pod *corev1.Pod) podOrder {
	return podOrder{pod.CreationTimestamp.UTC().Format("2006-01-02T15:04:05Z"), pod.Name}
}

// seen records the Pod's state as of its latest event.
func (b *bindablePods) seen(pod *corev1.Pod) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.remove(pod.Namespace, pod.Name)
	pool := pod.Labels[poolLabel]
	if pool == "" || !bindable(pod) {
		return
	}
	key, order := poolKey{pod.Namespace, pool}, creationOrder(pod)
	list := b.sorted[key]
	i := sort.Search(len(list), func(i int) bool { return !list[i].less(order) })
	list = append(list, podOrder{})
	copy(list[i+1:], list[i:])
	list[i] = order
	b.sorted[key] = list
	owner := pod.Annotations[lastOwnerAnnotation]
	if owner != "" {
		if b.lastOwner[key] == nil {
			b.lastOwner[key] = map[string]map[string]struct{}{}
		}
		if b.lastOwner[key][owner] == nil {
			b.lastOwner[key][owner] = map[string]struct{}{}
		}
		b.lastOwner[key][owner][pod.Name] = struct{}{}
	}
	b.entries[pod.Namespace+"/"+pod.Name] = trackedPod{pool, order, owner}
}

// gone records the Pod's deletion.
func (b *bindablePods) gone(namespace, name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.remove(namespace, name)
}

func (b *bindablePods) remove(namespace, name string) {
	entry, ok := b.entries[namespace+"/"+name]
	if !ok {
		return
	}
	delete(b.entries, namespace+"/"+name)
	key := poolKey{namespace, entry.pool}
	list := b.sorted[key]
	i := sort.Search(len(list), func(i int) bool { return !list[i].less(entry.order) })
	b.sorted[key] = append(list[:i], list[i+1:]...)
	if entry.owner != "" {
		held := b.lastOwner[key][entry.owner]
		delete(held, name)
		if len(held) == 0 {
			delete(b.lastOwner[key], entry.owner)
		}
	}
}

// holds reports whether the Pod is bindable in pool as of its latest event.
func (b *bindablePods) holds(namespace, pool, name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	entry, ok := b.entries[namespace+"/"+name]
	return ok && entry.pool == pool
}

// count is how many bindable Pods pool has.
func (b *bindablePods) count(namespace, pool string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sorted[poolKey{namespace, pool}])
}

// candidates are the Pod names to try for claim, a snapshot: those it held last, then
// the oldest first. The caller checks each Pod it tries again.
func (b *bindablePods) candidates(namespace, pool, claim string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := poolKey{namespace, pool}
	mine := make([]string, 0, len(b.lastOwner[key][claim]))
	for name := range b.lastOwner[key][claim] {
		mine = append(mine, name)
	}
	sort.Strings(mine)
	names := append(make([]string, 0, len(b.sorted[key])), mine...)
	for _, order := range b.sorted[key] {
		if _, held := b.lastOwner[key][claim][order.name]; !held {
			names = append(names, order.name)
		}
	}
	return names
}
