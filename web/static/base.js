// base.js: enhancements shared by every page. Pages work without it.
"use strict";
