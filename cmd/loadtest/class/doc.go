// Package class holds BenchmarkClass: what one oplab costs per
// learner in a class (issue 11 §5), measured from outside the packages it
// measures. The real embedded control plane, the real controller and
// oplab's web server with its sessions run in the benchmark's process; a
// child process plays the class over loopback HTTP as browsers
// would: learners that each create and delete Databases, watching their own
// stream, and an instructor presenting to followers. It prints figures and
// asserts nothing about time. It has no command; run it with
//
//	go test -run '^$' -bench Class -benchtime 1x ./cmd/loadtest/class/ -learners 30 -followers 30 -rounds 5
//
// With -worst it measures instead what oplab holds per learner when each
// does the worst its own kubeconfig allows (issue 19 §4): learners that
// download their kubeconfig through the lab page's link and, with a
// client-go client built from that file alone, create Databases past the
// quota, patch them over and over, scale their StatefulSets past the Pod
// quota, delete their Pods and open websockets past the per-session cap,
// for -worst-for. An ordinary class of the same size runs first, in the
// same process, as the baseline. It prints oplab's settled RSS, peak and
// heap per learner, and fails if a bound it exercises (the quota, the
// websocket cap) is gone:
//
//	go test -run '^$' -bench Class -benchtime 1x ./cmd/loadtest/class/ -worst -learners 10 -rounds 2
package class
