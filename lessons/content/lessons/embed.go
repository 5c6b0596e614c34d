// Package lessons holds the course's lesson pages, embedded: markdown with
// the front matter and fenced directives package lessons at
// github.com/oplab-dev/oplab/lessons reads, checks and renders (one file per
// page, named by its order and slug).
package lessons

import "embed"

// FS holds every lesson file at its root.
//
//go:embed *.md
var FS embed.FS
