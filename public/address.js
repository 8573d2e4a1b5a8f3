// A page that answers a form with a secret (a new key, a signing secret, a link) shows it once.
// It takes the address of what the form made, so that a reload reads that page, without the
// secret, rather than sending the form again; the server refuses such a repeat too.
const address = document.currentScript?.dataset.address;
if (address) history.replaceState(history.state, '', address);
