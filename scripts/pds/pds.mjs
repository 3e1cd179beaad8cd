// scripts/pds/pds.mjs — runs a real AT Protocol PDS (@atproto/pds) with an
// in-memory PLC directory (@did-plc/server) on 127.0.0.1, for tests.
//
//   node scripts/pds/pds.mjs --cache DIR --port-file PATH
//
// DIR is where scripts/pds/install.sh put the packages (DIR/app). Both
// servers listen on 127.0.0.1 only, on ports the system chooses: the PDS's
// own start() listens on every interface, so its express app is mounted on
// our own loopback server instead. When the PDS is ready, its port is
// written to PATH (atomically: PATH.tmp then rename) and "ready <url>" is
// printed. SIGTERM or SIGINT stops both servers, removes the data
// directory and exits 0. Any failure to start prints one line naming it
// and exits 1.
//
// The PDS runs in dev mode without an invite code, handles under ".test",
// and no AppView: com.atproto.* (accounts, sessions, records, handles) is
// real — with real lexicon validation of records — while app.bsky.* reads
// (notifications, threads, feeds) are not served (use tests/fakes/bsky).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { arg, fail as failWith, listenLoopback, writeAtomically } from './launch.mjs';

const fail = (msg) => failWith('pds', msg);

const cache = arg('--cache');
const portFile = arg('--port-file');
if (!cache || !portFile) fail('usage: node pds.mjs --cache DIR --port-file PATH');
const appDir = path.join(cache, 'app');
if (!fs.existsSync(path.join(appDir, 'node_modules', '@atproto', 'pds')))
	fail(`@atproto/pds is not installed in ${appDir}: run scripts/pds/install.sh`);

const require = createRequire(path.join(appDir, 'package.json'));

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ga-pds-'));
let pds = null;
let plcServer = null;
let pdsServer = null;

async function stop(code) {
	try {
		if (pds) await pds.destroy();
	} catch (e) {
		process.stderr.write(`pds: stopping the PDS: ${e.message}\n`);
	}
	for (const s of [pdsServer, plcServer]) if (s) s.close();
	fs.rmSync(dataDir, { recursive: true, force: true });
	process.exit(code);
}

process.on('SIGTERM', () => stop(0));
process.on('SIGINT', () => stop(0));

try {
	// The PLC directory, in memory.
	const { PlcServer, Database: PlcDatabase } = require('@did-plc/server');
	const plc = PlcServer.create({ db: PlcDatabase.mock(), port: 0 });
	plcServer = http.createServer(plc.app);
	const plcPort = await listenLoopback(plcServer);

	// The PDS: the port first (its public URL names it), then the app.
	pdsServer = http.createServer();
	pdsServer.keepAliveTimeout = 90_000;
	const port = await listenLoopback(pdsServer);
	const env = {
		PDS_HOSTNAME: 'localhost',
		PDS_PORT: String(port),
		PDS_DEV_MODE: 'true',
		PDS_INVITE_REQUIRED: 'false',
		PDS_SERVICE_HANDLE_DOMAINS: '.test',
		PDS_DID_PLC_URL: `http://127.0.0.1:${plcPort}`,
		PDS_DATA_DIRECTORY: dataDir,
		PDS_BLOBSTORE_DISK_LOCATION: path.join(dataDir, 'blobs'),
		PDS_JWT_SECRET: randomBytes(16).toString('hex'),
		PDS_ADMIN_PASSWORD: randomBytes(16).toString('hex'),
		PDS_PLC_ROTATION_KEY_K256_PRIVATE_KEY_HEX: randomBytes(32).toString('hex'),
		PDS_RATE_LIMITS_ENABLED: 'true',
		PDS_CRAWLERS: '',
		LOG_ENABLED: 'false',
	};
	Object.assign(process.env, env);
	const mod = await import(pathToFileURL(require.resolve('@atproto/pds')).href);
	const cfg = mod.envToCfg(mod.readEnv());
	const secrets = mod.envToSecrets(mod.readEnv());
	pds = await mod.PDS.create(cfg, secrets);
	await pds.ctx.sequencer.start();
	pdsServer.on('request', pds.app);
	writeAtomically(portFile, `${port}\n`);
	process.stdout.write(`ready http://127.0.0.1:${port}\n`);
} catch (e) {
	process.stderr.write(`pds: could not start: ${e.stack || e.message}\n`);
	await stop(1);
}
