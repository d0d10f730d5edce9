// Command scale is the client-go side of benchmarks/scale.py and benchmarks/reads.py: one
// informer of Pods, as a Go operator gets it, measured the way the Python side measures
// reconcilekit's cache.
//
// Usage: scale -kubeconfig PATH -mode full|metadata|baseline [-label-index LABEL]
//
//   - full: a SharedInformerFactory's Pod informer with a spec.nodeName indexer (the
//     factory adds the namespace one), managedFields dropped by a transform (as
//     reconcilekit's cache does by default); with -label-index LABEL the indexer is
//     named LABEL and indexes the Pods by that label's value instead;
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
//
// In full mode, three more commands read the cache (benchmarks/reads.py):
//
//   - "read SCENARIO MODE VALUE REPS": REPS timed reads, each one's objects all touched
//     (a field read) and then dropped; MODE is "lister" (the shared pointers the indexer
//     holds) or "deepcopy" (each object DeepCopy'd after the read, as controller-runtime's
//     cache reader does by default). SCENARIO "field": indexer.ByIndex(LABEL, VALUE);
//     "label": the lister's List of the selector VALUE (it walks every object);
//     "namespace": lister.Pods(ns).List(labels.Everything()) for each ns of the
//     comma-separated VALUE; "get": lister.Pods(ns).Get(name) of each key that
//     ByIndex(LABEL, VALUE) holds. Answers {"event":"read","objects":N,"seconds":[...],
//     "cpu_seconds":[...],"touched":T}: per repetition, the time it took and the
//     process's CPU time in it.
//   - "hold VALUE": the field read of VALUE in deepcopy mode, kept while VmRSS is read
//     (no collection first): {"event":"hold","objects","rss"}.
//   - "settle": {"event":"settled","rss","gc_rss"}, as after the sync.
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
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
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

func labelIndex(label string) cache.IndexFunc {
	return func(obj interface{}) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, nil
		}
		if value, found := pod.Labels[label]; found {
			return []string{value}, nil
		}
		return nil, nil
	}
}

// reader answers the read commands from the informer's indexer and a lister on it.
type reader struct {
	indexer cache.Indexer
	lister  corelisters.PodLister
	index   string
	touched int64 // what every read touched, printed, so that no read can be optimised away
}

// pods is one read of a scenario: the objects it returned, deep-copied when deep is set.
func (r *reader) pods(scenario, value string, deep bool) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	switch scenario {
	case "field":
		objs, err := r.indexer.ByIndex(r.index, value)
		if err != nil {
			return nil, err
		}
		out = make([]*corev1.Pod, 0, len(objs))
		for _, obj := range objs {
			out = append(out, obj.(*corev1.Pod))
		}
	case "label":
		selector, err := labels.Parse(value)
		if err != nil {
			return nil, err
		}
		if out, err = r.lister.List(selector); err != nil {
			return nil, err
		}
	case "namespace":
		for _, ns := range strings.Split(value, ",") {
			pods, err := r.lister.Pods(ns).List(labels.Everything())
			if err != nil {
				return nil, err
			}
			out = append(out, pods...)
		}
	default:
		return nil, fmt.Errorf("unknown scenario %q", scenario)
	}
	if deep {
		for i, pod := range out {
			out[i] = pod.DeepCopy()
		}
	}
	return out, nil
}

func (r *reader) touch(pod *corev1.Pod) {
	r.touched += int64(len(pod.Name))
	if pod.Status.Phase == corev1.PodRunning {
		r.touched++
	}
}

// gets reads each key with the lister's Get, deep-copied when deep is set, one at a time,
// each touched before the next is read; it returns the time spent touching.
func (r *reader) gets(keys []string, deep bool) (time.Duration, error) {
	var touching time.Duration
	for _, key := range keys {
		ns, name, err := cache.SplitMetaNamespaceKey(key)
		if err != nil {
			return 0, err
		}
		pod, err := r.lister.Pods(ns).Get(name)
		if err != nil {
			return 0, err
		}
		if deep {
			pod = pod.DeepCopy()
		}
		began := time.Now()
		r.touch(pod)
		touching += time.Since(began)
	}
	return touching, nil
}

// read runs reps timed reads; each one's objects are touched (timed apart too), then dropped.
func (r *reader) read(scenario, mode, value string, reps int) (map[string]interface{}, error) {
	if mode != "lister" && mode != "deepcopy" {
		return nil, fmt.Errorf("mode %q: expected lister or deepcopy", mode)
	}
	deep := mode == "deepcopy"
	var keys []string
	if scenario == "get" {
		var err error
		if keys, err = r.indexer.IndexKeys(r.index, value); err != nil {
			return nil, err
		}
	}
	seconds, cpu := make([]float64, 0, reps), make([]float64, 0, reps)
	touching := make([]float64, 0, reps)
	objects := 0
	for i := 0; i < reps; i++ {
		began, beganCPU := time.Now(), cpuSeconds()
		if scenario == "get" {
			touched, err := r.gets(keys, deep)
			if err != nil {
				return nil, err
			}
			touching = append(touching, touched.Seconds())
			objects = len(keys)
		} else {
			pods, err := r.pods(scenario, value, deep)
			if err != nil {
				return nil, err
			}
			read := time.Now()
			for _, pod := range pods {
				r.touch(pod)
			}
			touching = append(touching, time.Since(read).Seconds())
			objects = len(pods)
		}
		seconds = append(seconds, time.Since(began).Seconds())
		cpu = append(cpu, cpuSeconds()-beganCPU)
	}
	return map[string]interface{}{"event": "read", "scenario": scenario, "mode": mode,
		"objects": objects, "seconds": seconds, "touch_seconds": touching, "cpu_seconds": cpu,
		"touched": r.touched}, nil
}

// hold reads the objects of value by the field index, deep-copied, and measures VmRSS
// while they are held (no collection first).
func (r *reader) hold(value string) (map[string]interface{}, error) {
	pods, err := r.pods("field", value, true)
	if err != nil {
		return nil, err
	}
	for _, pod := range pods {
		r.touch(pod)
	}
	_, rss := memory()
	runtime.KeepAlive(pods)
	return map[string]interface{}{"event": "hold", "objects": len(pods), "rss": rss,
		"touched": r.touched}, nil
}

// command runs one read, hold or settle command line.
func (r *reader) command(fields []string) (map[string]interface{}, error) {
	switch {
	case r == nil:
		return nil, fmt.Errorf("%q needs -mode full", fields[0])
	case fields[0] == "read" && len(fields) == 5:
		reps, err := strconv.Atoi(fields[4])
		if err != nil || reps < 1 {
			return nil, fmt.Errorf("read: repetitions %q: expected a positive integer", fields[4])
		}
		return r.read(fields[1], fields[2], fields[3], reps)
	case fields[0] == "hold" && len(fields) == 2:
		return r.hold(fields[1])
	case fields[0] == "settle" && len(fields) == 1:
		afterGC := settle()
		_, rss := memory()
		return map[string]interface{}{"event": "settled", "rss": rss, "gc_rss": afterGC}, nil
	}
	return nil, fmt.Errorf("unexpected command %q", strings.Join(fields, " "))
}

// cpuSeconds is the CPU time (user and system) of the whole process so far: the garbage
// collector's workers on other threads included.
func cpuSeconds() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		fail(err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano()).Seconds()
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
	labelIndexed := flag.String("label-index", "",
		"full mode: index Pods by this label (an indexer of that name) instead of spec.nodeName")
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
	var reads *reader
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
		indexers := cache.Indexers{"spec.nodeName": nodeName}
		if *labelIndexed != "" {
			indexers = cache.Indexers{*labelIndexed: labelIndex(*labelIndexed)}
		}
		if err := informer.AddIndexers(indexers); err != nil {
			fail(err)
		}
		reads = &reader{indexer: informer.GetIndexer(),
			lister: factory.Core().V1().Pods().Lister(), index: *labelIndexed}
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
		if len(fields) > 0 && fields[0] != "burst" {
			answer, err := reads.command(fields)
			if err != nil {
				fail(err)
			}
			emit(answer)
			continue
		}
		if len(fields) != 3 {
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
