// Package benchclass holds BenchmarkClass: what one oplab costs per
// learner in a class (issue 11 §5), measured from outside the packages it
// measures. The real embedded control plane, the real controller and
// oplab's web server with its sessions run in the benchmark's process; a
// child process plays the class over loopback HTTP as browsers
// would: learners that each create and delete Databases, watching their own
// stream, and an instructor presenting to followers. It prints figures and
// asserts nothing about time. It has no command; run it with
//
//	go test -run '^$' -bench Class -benchtime 1x ./cmd/benchclass/ -learners 30 -followers 30 -rounds 5
package benchclass
