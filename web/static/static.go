// Package static embeds the stylesheets and scripts oplab serves under
// /static/, so the app works offline with no CDN.
package static

import "embed"

// FS holds every file of this folder but the Go sources, and the lab's
// modules (lab/).
//
//go:embed *.css *.js lab/*.js learn/*.js
var FS embed.FS
