// Package demos holds the instructor's scripted demos, embedded: markdown
// files with the front matter web/demo reads (one file per demo, named by
// its id). An instructor adds their own with oplab's --demos flag.
package demos

import "embed"

// FS holds every demo file at its root.
//
//go:embed *.md
var FS embed.FS
