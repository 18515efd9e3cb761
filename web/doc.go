// Package web serves Parley's browser client from the binary: the page
// (static/index.html, static/app.css) and the script bundle (dist/app.js,
// built from src/ and @stomp/stompjs by build.mjs and committed, so that
// building Parley needs no Node.js).
//
// The page references its assets by content hash (/app.js?v=...), so they
// are cached for a year and a new build is fetched at once; the page
// itself is revalidated on every load. Every response carries a
// Content-Security-Policy that allows nothing but this origin.
//
// It imports nothing of the project.
package web
