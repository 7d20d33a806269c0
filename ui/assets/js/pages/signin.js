// Sign-in with an ACL token's secret, kept in session storage.
import { html, useState } from '../../vendor/preact-htm.js';
import { token, whoami } from '../api.js';
import { ErrorNote } from '../components.js';

export function SignIn({ reason, onSignedIn }) {
  const [error, setError] = useState(reason ? new Error(reason) : null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    const secret = new FormData(e.target).get('token').trim();
    if (!secret) {
      setError(new Error('token: required'));
      return;
    }
    setBusy(true);
    try {
      const me = await whoami(secret);
      token.set(secret);
      onSignedIn(me);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return html`<main id="main" class="signin">
    <form onSubmit=${submit} class="card" aria-labelledby="signin-title">
      <h1 id="signin-title">raftcron</h1>
      <p>This cluster requires an ACL token. Sign in with its secret
        (<code>raftcron acl token create</code> prints one).</p>
      <label for="token">Token secret</label>
      <input id="token" name="token" type="password" autocomplete="off" autofocus required />
      <${ErrorNote} error=${error} />
      <button type="submit" class="primary" disabled=${busy}>Sign in</button>
      <p class="muted small">The token is kept in this tab only, until you sign out or close it.</p>
    </form>
  </main>`;
}
