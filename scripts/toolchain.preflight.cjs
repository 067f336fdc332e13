// Run first by `pnpm start`, `pnpm test` and `pnpm dev`: on a Node or pnpm too old for Retouch they
// would half work (engine warnings, then a service or a test run failing far from the cause), so
// this stops them at once with one line saying what to install.
// CommonJS without `?.`, `??` or `node:` specifiers on purpose: it must parse and run on the very
// Node it refuses, however old.
"use strict";
// biome-ignore lint/style/useNodejsImportProtocol: `node:` specifiers fail to load on Node before 14.18, which this must refuse politely.
const fs = require("fs");
// biome-ignore lint/style/useNodejsImportProtocol: as above.
const path = require("path");

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "package.json"), "utf8"));
// The one place the minimum is written: package.json's engines.node (">=22.2").
const wanted = /(\d+)(?:\.(\d+))?/.exec(manifest.engines.node) || ["", "22", "2"];
const minimum = { major: Number(wanted[1]), minor: Number(wanted[2] || 0) };
const pinnedPnpm = manifest.packageManager.split("@")[1];
const pnpmMajor = pinnedPnpm.split(".")[0];
const where = "README.md's first lines say how";

/** @param {string} version */
function tooOld(version) {
  const parts = version.split(".");
  const major = Number(parts[0]);
  return major < minimum.major || (major === minimum.major && Number(parts[1] || 0) < minimum.minor);
}

function problem() {
  if (tooOld(process.versions.node)) {
    return (
      `Retouch needs Node.js ${minimum.major}.${minimum.minor} or newer (24 recommended), not ${process.version} (${process.execPath}): ` +
      `install Node 24 (\`nvm install 24\`, \`fnm install 24\` or https://nodejs.org/en/download) and run this again; ${where}.`
    );
  }
  // pnpm says who runs the script; another client (`npm run`) is not refused here.
  const agent = /^pnpm\/(\d+)\.\S*/.exec(process.env.npm_config_user_agent || "");
  if (agent && Number(agent[1]) < Number(pnpmMajor)) {
    return (
      `Retouch needs pnpm ${pnpmMajor}, not ${agent[0].slice(5)}: run \`corepack enable\` (where corepack fails: ` +
      `\`npm install -g pnpm@${pnpmMajor}\`, or \`npx pnpm@${pnpmMajor}\` in place of \`pnpm\`) and run this again; ${where}.`
    );
  }
  return undefined;
}

const refusal = problem();
if (refusal) {
  process.stderr.write(`${refusal}\n`);
  process.exit(1);
}
