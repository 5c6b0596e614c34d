package controller

import "embed"

// Source holds the controller source files that carry lesson regions. The
// lessons cut the regions marked "// lesson:begin NAME" … "// lesson:end
// NAME" out of it, so a learner reads the code that is compiled and
// running, not a copy. Only these files are embedded: the rest of the
// package, and its tests, stay out of the binary. A file that gains a
// region must be added here; TestSourceEmbedsEveryRegion says so.
//
//go:embed database_controller.go database_finalizer.go database_status.go
var Source embed.FS
