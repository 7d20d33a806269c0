// The page and its filters live in the location's hash (#/jobs/NAME?q=..),
// so they survive a reload and can be shared; the hash never holds a token.
import { useEffect, useState } from '../vendor/preact-htm.js';

export function parseHash() {
  const h = location.hash.replace(/^#/, '') || '/';
  const [path, q] = h.split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(q || '') };
}

// setParams sets the hash's query, keeping the page.
export function setParams(params) {
  const { parts } = parseHash();
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  location.hash = `#/${parts.map(encodeURIComponent).join('/')}${s ? '?' + s : ''}`;
}

export function useRoute() {
  const [route, setRoute] = useState(parseHash());
  useEffect(() => {
    const on = () => setRoute(parseHash());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

// What each role may do, as the node's ACL rules grant it; the pages hide
// what the signed-in role may not do (the node refuses it anyway).
export const roles = {
  read: (role) => ['read', 'write', 'management'].includes(role),
  write: (role) => ['write', 'management'].includes(role),
  manage: (role) => role === 'management',
};
