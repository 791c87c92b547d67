// login.js: sends the token once, in a header, and lets the daemon keep it
// in an HttpOnly cookie (docs/ui.md).
'use strict';

document.getElementById('login').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const input = document.getElementById('token');
  const err = document.getElementById('login-error');
  const token = input.value.trim();
  err.hidden = true;
  let r;
  try {
    r = await fetch('/ui/login', {
      method: 'POST', credentials: 'same-origin', cache: 'no-store',
      headers: { 'Authorization': 'Bearer ' + token },
    });
  } catch (e) {
    r = null;
  }
  input.value = '';
  if (r !== null && r.ok) {
    location.replace('/ui/');
    return;
  }
  let msg = 'the host did not answer';
  if (r !== null) {
    try { msg = (await r.json()).error; } catch (e) { msg = r.statusText; }
  }
  err.textContent = msg;
  err.hidden = false;
});
