// Package e2e holds oplab's end-to-end tests: every page of the web
// packages played as a learner and an instructor would, on one real
// control plane, the real controller and one headless Chromium, which
// env_test.go starts for the whole package (through cmd/oplab/app, as the
// binary assembles oplab). Each web package's own tests stay beside it;
// these are the ones that need all of oplab at once. The package has no
// code of its own: its test binary is also the child the code page's
// sandbox runs.
package e2e
