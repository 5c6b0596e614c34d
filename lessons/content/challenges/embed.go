// Package challenges holds the challenge files, embedded: markdown with the
// front matter lessons/judge reads (one file per challenge, named by
// its id).
package challenges

import "embed"

// FS holds every challenge file at its root.
//
//go:embed *.md
var FS embed.FS
