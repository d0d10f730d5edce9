package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// What a reconcile does, as examples/cnclaim/claim.py does it:
//
//  1. Not bound (no spec.podName): bind. A Pod already labelled as this claim's is
//     adopted (read live first); else each bindable Pod of the pool (the one this claim
//     held last first, then the oldest) is tried: reserved against the other workers,
//     skipped while the cache has not seen this process's last write of it, and updated
//     (PUT, with the resourceVersion it was read at) to carry claimed-by=<claim> and
//     pod-phase=Bound; a 409 means someone else took it: try the next. Then one JSON
//     patch writes spec.podName and spec.nodeName and, on a claim without it yet, the
//     finalizer (tested against the claim's uid and finalizers, or resourceVersion), and
//     one merge patch of the status subresource says Bound (phase, the Bound condition,
//     boundTime), and a Normal "Bound" Event is recorded: three writes and an Event per
//     claim. No Pod free: the status says Pending (or stays Lost) and the claim is looked
//     at again in 15 s, or when an Idle Pod of its pool appears.
//  2. Bound: the Pod still exists (cache, else a live read): the status is written only
//     if it does not say Bound already; else the claim is Lost, its spec cleared first.
//  3. Deleted: every Pod labelled as its own is released (Draining, no claim label, the
//     last-owner annotation), or only unlabelled if another claim names it now; then the
//     finalizer goes.
//
// A reconcile acts only on a claim the cache shows at or after this process's last write
// of it (else it looks again in 0.2 s): acting on an older copy could bind it twice.

const (
	pendingRecheck  = 15 * time.Second
	cacheLagRetry   = 200 * time.Millisecond
	bindingAttempts = 3
	rewriteAttempts = 5
)

func podNameOf(claim *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(claim.Object, "spec", "podName")
	return name
}

func sourcePodOf(claim *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(claim.Object, "spec", "sourcePod", "podName")
	return name
}

func hasFinalizer(claim *unstructured.Unstructured) bool {
	for _, f := range claim.GetFinalizers() {
		if f == claimFinalizer {
			return true
		}
	}
	return false
}

func (c *Controller) reconcile(ctx context.Context, key string) (time.Duration, error) {
	obj, exists, err := c.claimIndex.GetByKey(key)
	if err != nil || !exists {
		c.claimRV.forget(key)
		return 0, err
	}
	claim := obj.(*unstructured.Unstructured)
	if !c.claimRV.seen(key, claim.GetResourceVersion()) {
		return cacheLagRetry, nil // acting now could bind twice
	}
	claim = claim.DeepCopy() // the cache's object is shared: never changed in place
	if claim.GetDeletionTimestamp() != nil {
		if !hasFinalizer(claim) {
			return 0, nil
		}
		return 0, c.cleanup(ctx, claim)
	}
	if !hasFinalizer(claim) && podNameOf(claim) == "" && sourcePodOf(claim) == "" {
		return c.apply(ctx, claim) // the binding's write adds the finalizer: one write less
	}
	if !hasFinalizer(claim) {
		written, err := c.patchClaim(ctx, claim, finalizerOps(claim))
		if err != nil {
			return 0, err
		}
		claim = written
	}
	return c.apply(ctx, claim)
}

func (c *Controller) apply(ctx context.Context, claim *unstructured.Unstructured) (
	time.Duration, error) {
	pool, _, _ := unstructured.NestedString(claim.Object, "spec", "poolName")
	selector, hasSelector, _ := unstructured.NestedMap(claim.Object, "spec", "selector")
	if pool == "" && !hasSelector {
		c.recorder.Event(claim, corev1.EventTypeWarning, "InvalidSpec",
			"spec.poolName or spec.selector is required")
		return 0, nil // retrying cannot help
	}
	switch {
	case sourcePodOf(claim) != "":
		klog.InfoS("migration is not part of this operator; leaving the claim",
			"claim", klog.KObj(claim))
		return 0, nil
	case podNameOf(claim) != "":
		return 0, c.sync(ctx, claim)
	}
	return c.bindOrWait(ctx, claim, pool, selector)
}

// -- binding ------------------------------------------------------------------------------

func heldBy(pod *corev1.Pod, claim string) bool {
	return pod.Labels[claimedByLabel] == claim && pod.Labels[phaseLabel] == "Bound" &&
		pod.DeletionTimestamp == nil
}

func (c *Controller) bindOrWait(ctx context.Context, claim *unstructured.Unstructured,
	pool string, selector map[string]interface{}) (time.Duration, error) {
	pod, err := c.bind(ctx, claim, pool, selector)
	if err != nil {
		return 0, err
	}
	if pod == nil {
		phase := "Pending"
		if current, _, _ := unstructured.NestedString(claim.Object, "status", "phase"); current == "Lost" {
			phase = "Lost"
		}
		if err := c.setPhase(ctx, claim, phase, "", nil); err != nil {
			return 0, err
		}
		return pendingRecheck, nil
	}
	bound, err := c.recordBinding(ctx, claim, pod)
	if err != nil {
		return 0, err
	}
	if bound {
		node := pod.Spec.NodeName
		if node == "" {
			node = "?"
		}
		c.recorder.Eventf(claim, corev1.EventTypeNormal, "Bound", "bound to Pod %s on node %s",
			pod.Name, node)
	}
	return 0, nil
}

// bind takes a Pod for claim: the Pod as written, or nil if none is free.
func (c *Controller) bind(ctx context.Context, claim *unstructured.Unstructured, pool string,
	selector map[string]interface{}) (*corev1.Pod, error) {
	ns, name := claim.GetNamespace(), claim.GetName()
	labelled, err := c.podIndex.ByIndex(claimedByIndex, ns+"/"+name)
	if err != nil {
		return nil, err
	}
	for _, obj := range labelled {
		if !heldBy(obj.(*corev1.Pod), name) {
			continue
		}
		// The cache may still show a label this claim has since released: adopt only
		// what the API server says it holds.
		pod, err := c.typed.CoreV1().Pods(ns).Get(ctx, obj.(*corev1.Pod).Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return nil, err
		}
		if heldBy(pod, name) && !c.namedByAnother(ns, pod.Name, name) {
			klog.InfoS("adopting a Pod already labelled as claimed", "pod", pod.Name, "claim", name)
			return pod, nil
		}
	}
	var match labels.Selector
	var names []string
	if pool != "" {
		names = c.tracker.candidates(ns, pool, name)
	} else {
		var err error
		if names, match, err = c.selectorCandidates(ns, name, selector); err != nil {
			c.recorder.Event(claim, corev1.EventTypeWarning, "InvalidSpec", err.Error())
			return nil, nil
		}
	}
	for _, podName := range names {
		pod, err := c.tryTake(ctx, ns, podName, name, match)
		if pod != nil || err != nil {
			return pod, err
		}
	}
	return nil, nil
}

// selectorCandidates: for a claim with a label selector instead of a pool, the bindable
// Pods it selects, the one it held last first, then the oldest.
func (c *Controller) selectorCandidates(ns, claim string, raw map[string]interface{}) (
	[]string, labels.Selector, error) {
	var selector metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &selector); err != nil {
		return nil, nil, fmt.Errorf("spec.selector: %w", err)
	}
	match, err := metav1.LabelSelectorAsSelector(&selector)
	if err != nil {
		return nil, nil, fmt.Errorf("spec.selector: %w", err)
	}
	pods, err := c.pods.Pods(ns).List(match)
	if err != nil {
		return nil, nil, err
	}
	var found []*corev1.Pod
	for _, pod := range pods {
		if bindable(pod) {
			found = append(found, pod)
		}
	}
	sort.Slice(found, func(i, j int) bool {
		mineI := found[i].Annotations[lastOwnerAnnotation] == claim
		mineJ := found[j].Annotations[lastOwnerAnnotation] == claim
		if mineI != mineJ {
			return mineI
		}
		return creationOrder(found[i]).less(creationOrder(found[j]))
	})
	names := make([]string, len(found))
	for i, pod := range found {
		names[i] = pod.Name
	}
	return names, match, nil
}

// tryTake takes Pod podName for claim unless another worker is on it, the cache has not
// seen this process's last write of it, it is no longer bindable, or someone else got it
// first (409): then nil, and the caller tries its next candidate.
func (c *Controller) tryTake(ctx context.Context, ns, podName, claim string,
	match labels.Selector) (*corev1.Pod, error) {
	key := ns + "/" + podName
	if !c.taking.hold(key) {
		return nil, nil
	}
	defer c.taking.release(key)
	cached, err := c.pods.Pods(ns).Get(podName)
	if apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if !c.podRV.seen(key, cached.ResourceVersion) || !bindable(cached) ||
		match != nil && !match.Matches(labels.Set(cached.Labels)) {
		return nil, nil
	}
	pod := cached.DeepCopy()
	pod.Labels[claimedByLabel] = claim
	pod.Labels[phaseLabel] = "Bound"
	taken, err := c.typed.CoreV1().Pods(ns).Update(ctx, pod, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		klog.V(4).InfoS("Pod taken by someone else; trying the next", "pod", podName)
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	c.podRV.wrote(key, taken.ResourceVersion)
	return taken, nil
}

func (c *Controller) namedByAnother(ns, pod, claim string) bool {
	keys, _ := c.claimIndex.IndexKeys(namesPodIndex, ns+"/"+pod)
	for _, key := range keys {
		if key != ns+"/"+claim {
			return true
		}
	}
	return false
}

// recordBinding names the Pod in the claim's spec (with the finalizer, if the claim has
// none yet), then says Bound. False if the claim went, is going, or kept changing under
// the write: the Pod is released again.
func (c *Controller) recordBinding(ctx context.Context, claim *unstructured.Unstructured,
	pod *corev1.Pod) (bool, error) {
	current := claim
	for attempt := 0; attempt < bindingAttempts && current.GetDeletionTimestamp() == nil; attempt++ {
		var ops []jsonPatchOp
		if !hasFinalizer(current) {
			ops = finalizerOps(current)
		}
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/spec/podName", Value: pod.Name})
		if pod.Spec.NodeName != "" {
			ops = append(ops, jsonPatchOp{Op: "add", Path: "/spec/nodeName", Value: pod.Spec.NodeName})
		} else if _, ok, _ := unstructured.NestedFieldNoCopy(current.Object, "spec", "nodeName"); ok {
			ops = append(ops, jsonPatchOp{Op: "remove", Path: "/spec/nodeName"})
		}
		written, err := c.patchClaim(ctx, current, ops)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
			live, err := c.claimsAPI.Namespace(claim.GetNamespace()).Get(ctx, claim.GetName(),
				metav1.GetOptions{})
			if apierrors.IsNotFound(err) || err == nil && live.GetUID() != claim.GetUID() {
				break
			} else if err != nil {
				return false, err
			}
			current = live
			continue
		} else if err != nil {
			return false, err
		}
		now := metav1.Now().UTC().Format(time.RFC3339)
		return true, c.setPhase(ctx, written, "Bound", pod.Name, now)
	}
	klog.InfoS("claim went or changed while binding; released its Pod", "claim",
		klog.KObj(claim), "pod", pod.Name)
	return false, c.release(ctx, pod, claim.GetName())
}

type jsonPatchOp struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	Value interface{} `json:"value,omitempty"`
}

// finalizerOps add the claim finalizer to the claim as read, and only to it: they test
// its uid and its finalizers (or, with none, its resourceVersion).
func finalizerOps(claim *unstructured.Unstructured) []jsonPatchOp {
	ops := []jsonPatchOp{{Op: "test", Path: "/metadata/uid", Value: string(claim.GetUID())}}
	if held, ok, _ := unstructured.NestedStringSlice(claim.Object, "metadata", "finalizers"); ok {
		return append(ops, jsonPatchOp{Op: "test", Path: "/metadata/finalizers", Value: held},
			jsonPatchOp{Op: "add", Path: "/metadata/finalizers/-", Value: claimFinalizer})
	}
	return append(ops,
		jsonPatchOp{Op: "test", Path: "/metadata/resourceVersion", Value: claim.GetResourceVersion()},
		jsonPatchOp{Op: "add", Path: "/metadata/finalizers", Value: []string{claimFinalizer}})
}

func (c *Controller) patchClaim(ctx context.Context, claim *unstructured.Unstructured,
	ops []jsonPatchOp) (*unstructured.Unstructured, error) {
	body, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	written, err := c.claimsAPI.Namespace(claim.GetNamespace()).Patch(ctx, claim.GetName(),
		types.JSONPatchType, body, metav1.PatchOptions{})
	if err == nil {
		c.claimRV.wrote(cache.MetaObjectToName(written).String(), written.GetResourceVersion())
	}
	return written, err
}

// setPhase writes the status that says phase (the phase, the Bound condition to match,
// boundTime: "" leaves it, nil removes it), and nothing when the status says so already.
func (c *Controller) setPhase(ctx context.Context, claim *unstructured.Unstructured,
	phase, pod string, boundTime interface{}) error {
	status, _, _ := unstructured.NestedMap(claim.Object, "status")
	var conditions []metav1.Condition
	if raw, ok := status["conditions"]; ok {
		wrapped := map[string]interface{}{"conditions": raw}
		var holder struct {
			Conditions []metav1.Condition `json:"conditions"`
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(wrapped, &holder); err != nil {
			return fmt.Errorf("status.conditions: %w", err)
		}
		conditions = holder.Conditions
	}
	before := append([]metav1.Condition(nil), conditions...)
	condition := metav1.Condition{Type: "Bound", Status: metav1.ConditionFalse, Reason: phase,
		Message: "waiting for an Idle Pod", ObservedGeneration: claim.GetGeneration()}
	switch phase {
	case "Bound":
		condition.Status, condition.Message = metav1.ConditionTrue, "bound to Pod "+pod
	case "Lost":
		condition.Message = "the bound Pod is gone; binding another"
	}
	meta.SetStatusCondition(&conditions, condition)
	changes := map[string]interface{}{"phase": phase, "conditions": conditions}
	unchanged := status["phase"] == phase && equality.Semantic.DeepEqual(before, conditions)
	switch boundTime := boundTime.(type) {
	case string:
		if boundTime != "" {
			changes["boundTime"] = boundTime
			unchanged = unchanged && status["boundTime"] == boundTime
		}
	case nil:
		changes["boundTime"] = nil
		_, had := status["boundTime"]
		unchanged = unchanged && !had
	}
	if unchanged {
		return nil
	}
	body, err := json.Marshal(map[string]interface{}{"status": changes})
	if err != nil {
		return err
	}
	written, err := c.claimsAPI.Namespace(claim.GetNamespace()).Patch(ctx, claim.GetName(),
		types.MergePatchType, body, metav1.PatchOptions{}, "status")
	if err == nil {
		c.claimRV.wrote(cache.MetaObjectToName(written).String(), written.GetResourceVersion())
	}
	return err
}

// -- keeping it bound ---------------------------------------------------------------------

// currentPod is the Pod from the cache, or if the cache has none, from the API server;
// nil if it is gone.
func (c *Controller) currentPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	if pod, err := c.pods.Pods(ns).Get(name); err == nil {
		return pod, nil
	}
	pod, err := c.typed.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return pod, err
}

func (c *Controller) sync(ctx context.Context, claim *unstructured.Unstructured) error {
	ns, podName := claim.GetNamespace(), podNameOf(claim)
	pod, err := c.currentPod(ctx, ns, podName)
	if err != nil {
		return err
	}
	if pod == nil {
		return c.lost(ctx, claim, podName)
	}
	node, _, _ := unstructured.NestedString(claim.Object, "spec", "nodeName")
	if pod.Spec.NodeName != "" && node != pod.Spec.NodeName {
		body := fmt.Sprintf(`{"spec":{"nodeName":%q}}`, pod.Spec.NodeName)
		written, err := c.claimsAPI.Namespace(ns).Patch(ctx, claim.GetName(),
			types.MergePatchType, []byte(body), metav1.PatchOptions{})
		if err != nil {
			return err
		}
		c.claimRV.wrote(cache.MetaObjectToName(written).String(), written.GetResourceVersion())
	}
	boundTime, _, _ := unstructured.NestedString(claim.Object, "status", "boundTime")
	if boundTime == "" {
		boundTime = metav1.Now().UTC().Format(time.RFC3339)
	}
	return c.setPhase(ctx, claim, "Bound", podName, boundTime)
}

// lost: the bound Pod is gone. The spec is cleared before the status says Lost, and the
// spec write's own event reconciles the claim again, which binds a new Pod.
func (c *Controller) lost(ctx context.Context, claim *unstructured.Unstructured,
	podName string) error {
	cleared, err := c.claimsAPI.Namespace(claim.GetNamespace()).Patch(ctx, claim.GetName(),
		types.MergePatchType, []byte(`{"spec":{"podName":null,"nodeName":null}}`),
		metav1.PatchOptions{})
	if err != nil {
		return err
	}
	c.claimRV.wrote(cache.MetaObjectToName(cleared).String(), cleared.GetResourceVersion())
	if err := c.setPhase(ctx, cleared, "Lost", "", nil); err != nil {
		return err
	}
	c.recorder.Eventf(claim, corev1.EventTypeWarning, "PodLost", "Pod %s is gone; binding another",
		podName)
	return nil
}

// -- deletion -----------------------------------------------------------------------------

// cleanup releases the deleted claim's Pods (read live: one bound a moment ago may not be
// cached yet), then removes the finalizer.
func (c *Controller) cleanup(ctx context.Context, claim *unstructured.Unstructured) error {
	ns, name := claim.GetNamespace(), claim.GetName()
	listed, err := c.typed.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: claimedByLabel + "=" + name})
	if err != nil {
		return err
	}
	pods := map[string]*corev1.Pod{}
	for i := range listed.Items {
		pods[listed.Items[i].Name] = &listed.Items[i]
	}
	for _, named := range []string{podNameOf(claim), sourcePodOf(claim)} {
		if _, ok := pods[named]; named == "" || ok {
			continue
		}
		pod, err := c.currentPod(ctx, ns, named)
		if err != nil {
			return err
		}
		if pod != nil && pod.Labels[claimedByLabel] == "" {
			pods[named] = pod
		}
	}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if c.namedByAnother(ns, pod.Name, name) {
			err = c.rewrite(ctx, pod, func(p *corev1.Pod) bool {
				if p.Labels[claimedByLabel] != name {
					return false
				}
				delete(p.Labels, claimedByLabel)
				return true
			})
		} else {
			err = c.release(ctx, pod, name)
		}
		if err != nil {
			return err
		}
	}
	held := claim.GetFinalizers()
	ops := []jsonPatchOp{{Op: "test", Path: "/metadata/uid", Value: string(claim.GetUID())},
		{Op: "test", Path: "/metadata/finalizers", Value: held}}
	for i := len(held) - 1; i >= 0; i-- {
		if held[i] == claimFinalizer {
			ops = append(ops, jsonPatchOp{Op: "remove", Path: fmt.Sprintf("/metadata/finalizers/%d", i)})
		}
	}
	_, err = c.patchClaim(ctx, claim, ops)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// release hands a Pod held by claim (or by nobody) back to its pool: Draining, no claim
// label, claim remembered as its last owner. Nothing is written if another claim holds it.
func (c *Controller) release(ctx context.Context, pod *corev1.Pod, claim string) error {
	return c.rewrite(ctx, pod, func(p *corev1.Pod) bool {
		if owner := p.Labels[claimedByLabel]; owner != "" && owner != claim {
			return false
		}
		delete(p.Labels, claimedByLabel)
		p.Labels[phaseLabel] = "Draining"
		if claim != "" {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[lastOwnerAnnotation] = claim
		}
		return true
	})
}

// rewrite applies change to a copy of pod and updates it; on a 409 it reads the Pod again
// and lets change decide anew. change returns false when the Pod needs nothing.
func (c *Controller) rewrite(ctx context.Context, pod *corev1.Pod,
	change func(*corev1.Pod) bool) error {
	current := pod.DeepCopy()
	for attempt := 0; attempt < rewriteAttempts; attempt++ {
		if current.Labels == nil {
			current.Labels = map[string]string{}
		}
		if !change(current) {
			return nil
		}
		written, err := c.typed.CoreV1().Pods(pod.Namespace).Update(ctx, current, metav1.UpdateOptions{})
		switch {
		case err == nil:
			c.podRV.wrote(pod.Namespace+"/"+pod.Name, written.ResourceVersion)
			return nil
		case apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err) || attempt == rewriteAttempts-1:
			return err
		}
		current, err = c.typed.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
	}
	return nil
}
