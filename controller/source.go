package controller

import "embed"

// Source holds the controller's Go sources. The lessons cut the regions
// marked "// lesson:begin NAME" … "// lesson:end NAME" out of it, so a
// learner reads the code that is compiled and running, not a copy.
//
//go:embed *.go
var Source embed.FS
