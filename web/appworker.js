// clefcheck's service worker (go-app's app-worker.js, from this template:
// web/handler.go fills in the version and the files to keep).
//
// It keeps the app's own files (the shell: app.wasm, its scripts, styles,
// icons and the start page) so that the site opens offline, and serves
// them from its cache; offline, a page's navigation gets the start page,
// which shows the page asked for. Every other request is left to the network,
// untouched: an adapter's ranges (the Hub's, a CDN's, the site's own), a
// decision server's answers, the demo world, the engine's workers and
// their scripts. For those it calls no respondWith, so their bytes never
// pass through this worker, and a request it does not answer cannot wait
// on it (go-app's default answered every request, POSTs and ranges
// included, through its cache lookup and a fetch of its own).
"use strict";
const cacheName = "app-" + "{{.Version}}";
const resourcesToCache = {{.ResourcesToCache}};
const shell = new Set(resourcesToCache.map((u) => new URL(u, self.location.href).href));
// The start page, as the shell names it ("/", or the sub-path the site is
// served under, with no trailing slash): what a navigation gets offline.
const scope = new URL(self.registration.scope).pathname;
const start = [...shell].find((u) => {
  const p = new URL(u).pathname;
  return p === scope || p + "/" === scope;
});

self.addEventListener("install", (event) => {
  // The cache is filled before this worker is installed (waitUntil), so
  // an activated worker never serves from a half-filled one; a file that
  // cannot be fetched fails the install, which the next visit tries again.
  event.waitUntil(
    (async () => {
      const cache = await caches.open(cacheName);
      // From the server, not the HTTP cache: a host's max-age would
      // otherwise put the files of the version before under this one's name.
      await cache.addAll(resourcesToCache.map((u) => new Request(u, { cache: "reload" })));
      await self.skipWaiting();
    })()
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      for (const key of await caches.keys()) {
        if (key !== cacheName) await caches.delete(key).catch(() => {});
      }
      await self.clients.claim();
    })()
  );
});

self.addEventListener("fetch", (event) => {
  const req = event.request;
  if (req.mode === "navigate" && req.method === "GET" && start && !shell.has(req.url)) {
    // A page (any of the app's routes): the network's, and offline the
    // start page, from which the app shows the route asked for.
    event.respondWith(
      fetch(req).catch(async (err) => {
        const hit = await caches.match(start, { cacheName: cacheName });
        if (hit) return hit;
        throw err;
      })
    );
    return;
  }
  if (req.method !== "GET" || req.headers.has("range") || !shell.has(req.url)) {
    return; // the network's
  }
  event.respondWith(
    (async () => {
      const hit = await caches.match(req, { cacheName: cacheName });
      return hit || fetch(req);
    })()
  );
});
