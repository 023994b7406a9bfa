// `npm pack` and `npm publish` run this (the prepack script) before `prepare` builds dist/. It ships the lock's
// production entries as npm-shrinkwrap.json, so that `npm install -g` of the package installs exactly the versions
// the project tested instead of the newest its ranges allow; the postpack script removes it again.
import { readFileSync, writeFileSync } from 'node:fs';

const lock = JSON.parse(readFileSync(new URL('../package-lock.json', import.meta.url), 'utf8'));
// Development packages are never installed with the package, so their entries would only make the tarball larger.
const packages = Object.fromEntries(Object.entries(lock.packages).filter(([path, entry]) => path === '' || !entry.dev));
writeFileSync(new URL('../npm-shrinkwrap.json', import.meta.url), `${JSON.stringify({ ...lock, packages }, null, 2)}\n`);
