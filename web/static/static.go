// Package static embeds the stylesheets and scripts oplab serves under
// /static/, so the app works offline with no CDN.
package static

import "embed"

// FS holds every file of this folder but the Go sources.
//
//go:embed *.css *.js
var FS embed.FS
