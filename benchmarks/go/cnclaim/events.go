package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// eventRecorder writes core/v1 Events about claims in the background, one request at a
// time, as client-go's tools/record writes an event's first occurrence: named
// <object>.<hex nanoseconds>, involvedObject the claim, source the component, count 1.
// (tools/record itself needs github.com/golang/groupcache, which benchmarks/go's
// vendored modules do not hold.) Its client carries the rate limit (20 a second, bursts
// of 30: controller-runtime's default, and reconcilekit's EventRecorder's). Recording
// never blocks a reconcile: when maxPending events wait, a new one is dropped, as
// record's broadcaster drops them when its queue is full.
type eventRecorder struct {
	client    kubernetes.Interface
	component string
	pending   chan *corev1.Event
}

const maxPending = 10000

func newEventRecorder(client kubernetes.Interface, component string) *eventRecorder {
	return &eventRecorder{client: client, component: component,
		pending: make(chan *corev1.Event, maxPending)}
}

// Eventf records an event about obj.
func (r *eventRecorder) Eventf(obj *unstructured.Unstructured, eventType, reason,
	format string, args ...interface{}) {
	now := time.Now()
	stamp := metav1.NewTime(now)
	event := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%v.%x", obj.GetName(), now.UnixNano()),
			Namespace: obj.GetNamespace()},
		InvolvedObject: corev1.ObjectReference{APIVersion: obj.GetAPIVersion(),
			Kind: obj.GetKind(), Name: obj.GetName(), Namespace: obj.GetNamespace(),
			UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion()},
		Reason: reason, Message: fmt.Sprintf(format, args...), Type: eventType,
		Source:         corev1.EventSource{Component: r.component},
		FirstTimestamp: stamp, LastTimestamp: stamp, Count: 1,
		ReportingController: r.component,
	}
	select {
	case r.pending <- event:
	default:
		klog.InfoS("event dropped: too many pending", "object", klog.KObj(obj), "reason", reason)
	}
}

// Event records an event with a fixed message.
func (r *eventRecorder) Event(obj *unstructured.Unstructured, eventType, reason,
	message string) {
	r.Eventf(obj, eventType, reason, "%s", message)
}

// run writes the pending events until ctx ends.
func (r *eventRecorder) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case event := <-r.pending:
			_, err := r.client.CoreV1().Events(event.Namespace).Create(ctx, event,
				metav1.CreateOptions{})
			if err != nil && ctx.Err() == nil {
				klog.InfoS("writing an event failed", "event", event.Name, "err", err)
			}
		}
	}
}
