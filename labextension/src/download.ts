/**
 * Downloads made from fetched answers (CSV exports of the admin and
 * Statistics pages): the name a server gave the file, and the save.
 */

/** Hand `blob` to the browser as a download named `name`. */
export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.style.display = 'none';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/**
 * The file name a Content-Disposition header gives (RFC 6266: `filename*`
 * over `filename`), stripped of any path, or `fallback`.
 */
export function fileNameFrom(disposition: string | null, fallback: string): string {
  let name = '';
  if (disposition) {
    const star = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(disposition);
    const plain = /filename\s*=\s*"([^"]*)"/i.exec(disposition) ?? /filename\s*=\s*([^;\s]+)/i.exec(disposition);
    if (star) {
      try {
        name = decodeURIComponent(star[1].trim());
      } catch {
        name = '';
      }
    }
    if (!name && plain) {
      name = plain[1];
    }
  }
  name = name.split(/[\\/]/).pop()!.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  return name && name !== '.' && name !== '..' ? name : fallback;
}
