// clefcheckDropped takes a drop's items while the drop event lasts (they
// are gone after it) and resolves to an array of File whose "names" are
// each file's path inside the dropped folder, read recursively with
// webkitGetAsEntry; a single dropped folder's own name is left out, as a
// folder picker's webkitRelativePath is read. Plain files keep their names.
function clefcheckDropped(dt) {
  const files = [], names = [], max = 100000;
  const entries = [...(dt.items || [])].map(i => i.webkitGetAsEntry && i.webkitGetAsEntry()).filter(e => e);
  const done = () => { files.names = names; return files };
  if (!entries.length) {
    for (const f of dt.files || []) { files.push(f); names.push(f.name) }
    return Promise.resolve(done());
  }
  const strip = entries.length === 1 && entries[0].isDirectory;
  const readAll = (r) => new Promise((ok, ko) => {
    const all = [];
    const next = () => r.readEntries(b => { if (!b.length) return ok(all); all.push(...b); next() }, ko);
    next();
  });
  const walk = (e) => {
    if (files.length >= max) return Promise.reject(new Error("more than " + max + " files dropped"));
    if (e.isFile) return new Promise((ok, ko) => e.file(f => {
      let p = e.fullPath.replace(/^\/+/, "");
      if (strip) p = p.slice(p.indexOf("/") + 1);
      files.push(f); names.push(p); ok();
    }, ko));
    return readAll(e.createReader()).then(es => Promise.all(es.map(walk)));
  };
  return Promise.all(entries.map(walk)).then(done);
}

// clefcheckHasService resolves to true when url (the site's health) is
// answered by a decision service ({"status": …}), false on a static host.
function clefcheckHasService(url) {
  const ctl = new AbortController();
  setTimeout(() => ctl.abort(), 5000);
  return fetch(url, {signal: ctl.signal, cache: "no-store"})
    .then(r => r.ok ? r.json() : null).then(j => !!(j && j.status)).catch(() => false);
}

// go-app runs a page's event handlers after the event has returned, when a
// drop's items can no longer be read: take them here, in the capture
// phase, for the drop zones (.drop), and let the page pick them up
// (clefcheckDropOf).
document.addEventListener("dragover", e => { if (e.target.closest && e.target.closest(".drop")) e.preventDefault() }, true);
document.addEventListener("drop", e => {
  if (!(e.target.closest && e.target.closest(".drop"))) return;
  e.preventDefault();
  e.__clefcheckFiles = clefcheckDropped(e.dataTransfer);
}, true);

function clefcheckDropOf(e) { return e.__clefcheckFiles || clefcheckDropped(e.dataTransfer) }
