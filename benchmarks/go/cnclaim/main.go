// Command cnclaim is the client-go anchor of benchmarks/e2e.py's claim storm: the CNClaim
// binding of examples/cnclaim written as a Go operator is, with client-go v0.28.7 alone.
//
// Usage: cnclaim -kubeconfig PATH [-namespace NS] [-workers N] [-metrics-addr HOST:PORT]
//
// It runs one controller, "cnclaim", on the same informers the example's manager holds
// (CNClaims, CNPools and CNClaimSets through dynamicinformer, Pods through the typed
// SharedInformerFactory, managedFields dropped by a transform as reconcilekit's cache drops
// them), a rate-limited work queue (util/workqueue, client-go's default controller rate
// limiter) drained by -workers goroutines. What a reconcile does, and what it writes, is
// the example's claim controller's (examples/cnclaim/claim.py): see binding.go. What it
// leaves out: migration (a claim with spec.sourcePod is logged and left alone), the
// CNPool and CNClaimSet controllers (their informers run, so both operators watch the
// same kinds; a storm has no pool or set objects for them to act on) and the validating
// webhook.
//
// Requests go out with client-go's client-side rate limiter off (reconcilekit's client has
// none); Events are written in the background on a client of their own limited to 20
// requests a second in bursts of 30, controller-runtime's defaults, which reconcilekit's
// EventRecorder also applies (events.go).
//
// /metrics (at -metrics-addr) serves, in Prometheus' text format, the two series
// benchmarks/e2e.py reads from either operator: controller_runtime_reconcile_total
// {controller,result} and reconcilekit_client_requests_total{verb,resource,code}, each
// request counted once its answer came, as reconcilekit counts them.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig (required)")
	namespace := flag.String("namespace", "", "watch this namespace only (default: all)")
	workers := flag.Int("workers", 8, "concurrent reconciles")
	metricsAddr := flag.String("metrics-addr", "", "serve /metrics here (default: not at all)")
	flag.Parse()
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "cnclaim: -kubeconfig is required")
		os.Exit(2)
	}
	if *workers < 1 {
		fmt.Fprintf(os.Stderr, "cnclaim: -workers must be at least 1, not %d\n", *workers)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, *kubeconfig, *namespace, *workers, *metricsAddr); err != nil {
		fmt.Fprintf(os.Stderr, "cnclaim: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, namespace string, workers int,
	metricsAddr string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("reading %s: %w", kubeconfig, err)
	}
	counts := newCounters()
	cfg.Wrap(counts.wrap)
	events := rest.CopyConfig(cfg)
	events.QPS, events.Burst = 20, 30
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	eventClient, err := kubernetes.NewForConfig(events)
	if err != nil {
		return err
	}
	recorder := newEventRecorder(eventClient, "cnclaim-operator")
	go recorder.run(ctx)

	podFactory := informers.NewSharedInformerFactoryWithOptions(typed, 0,
		informers.WithNamespace(namespace))
	crFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, namespace,
		nil)
	pods := podFactory.Core().V1().Pods()
	claims := crFactory.ForResource(claimsGVR)
	for _, informer := range []cache.SharedIndexInformer{
		pods.Informer(), claims.Informer(), crFactory.ForResource(poolsGVR).Informer(),
		crFactory.ForResource(claimSetsGVR).Informer()} {
		if err := informer.SetTransform(dropManagedFields); err != nil {
			return err
		}
	}
	controller, err := newController(typed, dyn, pods, claims, recorder, counts)
	if err != nil {
		return err
	}
	if metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", counts)
		server := &http.Server{Addr: metricsAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := server.ListenAndServe(); err != nil && err != http.ErrServerClosed {
				klog.ErrorS(err, "serving /metrics")
			}
		}()
		defer server.Close()
	}
	podFactory.Start(ctx.Done())
	crFactory.Start(ctx.Done())
	defer podFactory.Shutdown()
	defer crFactory.Shutdown()
	klog.InfoS("starting", "namespace", namespace, "workers", workers)
	return controller.Run(ctx, workers)
}

// dropManagedFields is the informers' transform: objects are cached without their
// managedFields, as reconcilekit's cache keeps them by default.
func dropManagedFields(obj interface{}) (interface{}, error) {
	if object, ok := obj.(metav1.Object); ok {
		object.SetManagedFields(nil)
	}
	return obj, nil
}
