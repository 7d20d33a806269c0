// The UI's shell: who is signed in, the navigation, and which page the
// location's hash names.
import { html, render, useEffect, useState } from '../vendor/preact-htm.js';
import { roles, useRoute } from './route.js';
import { onUnauthenticated, token, whoami } from './api.js';
import { runs } from './store.js';
import { Overview } from './pages/overview.js';
import { Jobs } from './pages/jobs.js';
import { JobPage } from './pages/job.js';
import { Runs } from './pages/runs.js';
import { Audit } from './pages/audit.js';
import { CalendarPage, Calendars } from './pages/calendars.js';
import { Alerts } from './pages/alerts.js';
import { SignIn } from './pages/signin.js';

function page(route, me) {
  const [first, second] = route.parts;
  switch (first) {
    case undefined:
      return html`<${Overview} me=${me} />`;
    case 'jobs':
      return second
        ? html`<${JobPage} key=${second} name=${second} me=${me} />`
        : html`<${Jobs} params=${route.params} me=${me} />`;
    case 'runs':
      return html`<${Runs} params=${route.params} me=${me} />`;
    case 'calendars':
      return second
        ? html`<${CalendarPage} key=${second} name=${second} />`
        : html`<${Calendars} />`;
    case 'alerts':
      return html`<${Alerts} params=${route.params} me=${me} />`;
    case 'audit':
      return roles.manage(me.role)
        ? html`<${Audit} params=${route.params} me=${me} />`
        : html`<p class="notice">The audit trail needs a token with the management role.</p>`;
    default:
      return html`<p class="notice">No such page. <a href="#/">Overview</a></p>`;
  }
}

function Nav({ route, me }) {
  const here = route.parts[0] || '';
  const link = (to, label) => html`<a href="#/${to}" aria-current=${here === to ? 'page' : undefined}>${label}</a>`;
  return html`<nav aria-label="Main">
    ${link('', 'Overview')} ${link('jobs', 'Jobs')} ${link('runs', 'Runs')} ${link('calendars', 'Calendars')} ${link('alerts', 'Alerts')}
    ${roles.manage(me.role) && link('audit', 'Audit')}
  </nav>`;
}

function App() {
  const route = useRoute();
  // me: undefined while asking, null when a token is needed.
  const [me, setMe] = useState(undefined);
  const [reason, setReason] = useState('');

  const signOut = (why) => {
    token.clear();
    runs.close();
    setReason(why || '');
    setMe(null);
  };

  useEffect(() => {
    onUnauthenticated((err) => signOut(err.message));
    const had = token.get();
    whoami(had).then(setMe, (err) => {
      if (err.httpStatus !== 401) {
        setMe({ error: err });
        return;
      }
      token.clear();
      setReason(had ? err.message : '');
      setMe(null);
    });
  }, []);

  useEffect(() => {
    if (me && me.role && roles.read(me.role)) runs.start();
  }, [me]);

  if (me === undefined) return html`<main id="main" class="loading" aria-busy="true">Loading…</main>`;
  if (me === null) return html`<${SignIn} reason=${reason} onSignedIn=${(m) => { setReason(''); setMe(m); }} />`;
  if (me.error) return html`<main id="main"><p class="error" role="alert">${me.error.message}</p></main>`;
  return html`
    <a class="skip" href="#main" onClick=${(e) => { e.preventDefault(); document.getElementById('main').focus(); }}>Skip to content</a>
    <header class="top">
      <a class="brand" href="#/">raftcron</a>
      <${Nav} route=${route} me=${me} />
      <div class="who">
        <span title="signed in as">${me.name}</span> <span class="badge quiet">${me.role}</span>
        ${token.get() && html`<button type="button" class="link" onClick=${() => signOut('')}>Sign out</button>`}
      </div>
    </header>
    <main id="main" tabindex="-1">
      ${roles.read(me.role)
        ? page(route, me)
        : html`<p class="notice">This token's role (${me.role}) cannot read jobs or runs.</p>`}
    </main>`;
}

render(html`<${App} />`, document.getElementById('app'));
