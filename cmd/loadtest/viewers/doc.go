// Package viewers holds BenchmarkControllerWithViewers: what websocket
// viewers cost the real controller on the real embedded cluster, measured
// from outside the packages it measures (web and web/stream). It has no
// command; run it with
//
//	go test -run '^$' -bench ControllerWithViewers -benchtime 1x ./cmd/loadtest/viewers/ -dbs 100 -viewers 2000 -rounds 5
package viewers
