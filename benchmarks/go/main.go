// Command scale is the client-go side of benchmarks/scale.py: one informer of Pods, as a
// Go operator gets it, measured the way the Python side measures reconcilekit's cache.
//
// Usage: scale -kubeconfig PATH -mode full|metadata|baseline
//
//   - full: a SharedInformerFactory's Pod informer with a spec.nodeName indexer (the
//     factory adds the namespace one), managedFields dropped by a transform (as
//     reconcilekit's cache does by default);
//   - metadata: the metadata informer (k8s.io/client-go/metadata/metadatainformer) of
//     Pods, managedFields dropped likewise;
//   - baseline: the same client and one request, no informer (the RSS the informers'
//     figures are taken against).
//
// It prints one JSON line once synced: {"event":"synced","sync_seconds","objects",
// "peak_rss","settled_rss","gc_rss"} (bytes; peak is VmHWM, settled is VmRSS after
// runtime.GC and debug.FreeOSMemory, gc_rss after runtime.GC alone). Then it reads lines
// from stdin: "burst VALUE COUNT" answers {"event":"armed"}, waits until the informer has
// delivered COUNT Pods updated with the label scale-burst=VALUE to its update handler and
// prints {"event":"burst","done_at":UNIX_SECONDS,...}; end of input ends the program.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

const burstLabel = "scale-burst"

// burst counts the distinct objects seen with burstLabel=want.
type burst struct {
	mu   sync.Mutex
	want string
	seen map[string]struct{}
	need int
	done chan struct{}
}

func (b *burst) observe(obj interface{}) {
	meta, err := metaOf(obj)
	if err != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil || meta.GetLabels()[burstLabel] != b.want {
		return
	}
	b.seen[meta.GetNamespace()+"/"+meta.GetName()] = struct{}{}
	if len(b.seen) >= b.need {
		close(b.done)
		b.done = nil
	}
}

func (b *burst) arm(want string, need int) chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	done := make(chan struct{})
	b.want, b.need, b.seen, b.done = want, need, map[string]struct{}{}, done
	return done
}

func metaOf(obj interface{}) (metav1.Object, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o, nil
	case *metav1.PartialObjectMetadata:
		return o, nil
	}
	return nil, fmt.Errorf("unexpected object %T", obj)
}

func stripManagedFields(obj interface{}) (interface{}, error) {
	if meta, err := metaOf(obj); err == nil {
		meta.SetManagedFields(nil)
	}
	return obj, nil
}

func nodeName(obj interface{}) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return nil, nil
	}
	return []string{pod.Spec.NodeName}, nil
}

// memory returns VmHWM and VmRSS of this process, in bytes.
func memory() (peak, rss int64) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fail(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmHWM:":
			peak = kb * 1024
		case "VmRSS:":
			rss = kb * 1024
		}
	}
	return peak, rss
}

// settle collects garbage and returns freed memory to the OS; the RSS after the
// collection alone, before the memory is returned.
func settle() int64 {
	runtime.GC()
	_, rss := memory()
	debug.FreeOSMemory()
	return rss
}

func emit(v map[string]interface{}) {
	line, err := json.Marshal(v)
	if err != nil {
		fail(err)
	}
	fmt.Println(string(line))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scale:", err)
	os.Exit(1)
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	mode := flag.String("mode", "full", "full, metadata or baseline")
	flag.Parse()
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := &burst{}
	handler := cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj interface{}) { b.observe(obj) },
	}
	var informer cache.SharedIndexInformer
	var start func()
	switch *mode {
	case "baseline":
		clientset, err := kubernetes.NewForConfig(config)
		if err != nil {
			fail(err)
		}
		if _, err := clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			fail(err)
		}
		afterGC := settle()
		peak, rss := memory()
		emit(map[string]interface{}{"event": "synced", "sync_seconds": 0, "objects": 0,
			"peak_rss": peak, "settled_rss": rss, "gc_rss": afterGC})
		_, _ = io.Copy(io.Discard, os.Stdin) // live until told, so its CPU can be read
		return
	case "full":
		clientset, err := kubernetes.NewForConfig(config)
		if err != nil {
			fail(err)
		}
		factory := informers.NewSharedInformerFactory(clientset, 0)
		informer = factory.Core().V1().Pods().Informer()
		if err := informer.AddIndexers(cache.Indexers{"spec.nodeName": nodeName}); err != nil {
			fail(err)
		}
		start = func() { factory.Start(ctx.Done()) }
	case "metadata":
		client, err := metadata.NewForConfig(config)
		if err != nil {
			fail(err)
		}
		factory := metadatainformer.NewSharedInformerFactory(client, 0)
		informer = factory.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Informer()
		start = func() { factory.Start(ctx.Done()) }
	default:
		fail(fmt.Errorf("-mode %q: expected full, metadata or baseline", *mode))
	}
	if err := informer.SetTransform(stripManagedFields); err != nil {
		fail(err)
	}
	if _, err := informer.AddEventHandler(handler); err != nil {
		fail(err)
	}
	began := time.Now()
	start()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		fail(fmt.Errorf("informer did not sync"))
	}
	synced := time.Since(began).Seconds()
	peak, _ := memory()
	afterGC := settle()
	_, rss := memory()
	emit(map[string]interface{}{"event": "synced", "sync_seconds": synced,
		"objects": len(informer.GetStore().ListKeys()), "peak_rss": peak, "settled_rss": rss,
		"gc_rss": afterGC})

	scanner := bufio.NewScanner(os.Stdin)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) != 3 || fields[0] != "burst" {
			fail(fmt.Errorf("unexpected command %q", scanner.Text()))
		}
		need, err := strconv.Atoi(fields[2])
		if err != nil {
			fail(err)
		}
		done := b.arm(fields[1], need)
		emit(map[string]interface{}{"event": "armed"})
		<-done
		doneAt := float64(time.Now().UnixNano()) / 1e9
		peak, rss := memory()
		emit(map[string]interface{}{"event": "burst", "done_at": doneAt, "peak_rss": peak,
			"rss": rss})
	}
}
