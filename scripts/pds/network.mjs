// scripts/pds/network.mjs — runs a whole AT Protocol network for tests:
// @atproto/dev-env's TestNetwork (a PLC directory, a PDS and an AppView, with
// the AppView's helpers), on the PostgreSQL and Redis the caller started,
// plus two servers of ours on 127.0.0.1:
//
//   the proxy    in front of the PDS: what an agent under test talks to
//                (BLUESKY_SERVICE). It forwards every request, except that
//                it can hold the next write (a request kept and never
//                forwarded, or forwarded and its answer kept) — how a crash
//                between "sent" and "answered" is reproduced;
//   the control  a small JSON API for the test: accounts, posts as a person
//                would make them (facets detected by @atproto/api's
//                RichText), reads through the AppView, waiting for the
//                AppView to index, the holds, and the network's clock.
//
//   node scripts/pds/network.mjs --cache DIR --port-file PATH \
//        --db postgres://USER@127.0.0.1:PORT/DB --schema NAME --redis 127.0.0.1:PORT
//
// DIR is where scripts/pds/install.sh put the packages (DIR/net). dev-env's
// own servers listen on EVERY interface on ports it picks (it has no host
// option): run this only where that is acceptable. When ready, PATH gets
// (atomically) {"proxy", "control", "pds", "appview", "plc"} as JSON and
// "ready <proxy url>" is printed. SIGTERM or SIGINT closes the network,
// removes its data directories and exits 0; a failure to start prints one
// line naming it and exits 1.
//
// Control API (POST, a JSON body, a JSON answer; errors: 4xx/5xx with
// {"error": "..."}):
//   /account  {handle, password}                   → {did, handle}
//   /post     {handle, password, text, parent?: {uri, cid}, chain?}
//             a post (a reply to parent, the root taken from the parent's
//             record), facets detected; chain: the gaChain field an agent
//             writes                               → {uri, cid}
//   /process  {}  waits until the AppView indexed everything   → {}
//   /thread   {handle, password, uri, depth?}  getPostThread as that
//             account, through the AppView         → the answer
//   /notifications {handle, password}  listNotifications as that account
//                                                  → the answer
//   /records  {repo, collection}  listRecords (100, newest first) → the answer
//   /hold     {mode: "request"|"response", nsid, collection?}  the next
//             matching request through the proxy is held → {}
//   /held     {}  → {armed, held, done, counts}: held = requests being held
//             now, done = holds that caught one, counts = requests through
//             the proxy by NSID
//   /release  {}  the held requests are dropped (their connections closed,
//             never answered) → {}
//   /clock    {offsetMs}  the network's clock runs offsetMs ahead (every
//             expiry the PDS checks, every time it writes)  → {}
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { arg, fail as failWith, listenLoopback, writeAtomically } from './launch.mjs';

const fail = (msg) => failWith('network', msg);

const cache = arg('--cache');
const portFile = arg('--port-file');
const dbUrl = arg('--db');
const schema = arg('--schema');
const redis = arg('--redis');
if (!cache || !portFile || !dbUrl || !schema || !redis)
	fail('usage: node network.mjs --cache DIR --port-file PATH --db URL --schema NAME --redis HOST:PORT');
if (!/^[A-Za-z_]+$/.test(schema)) fail(`the schema name '${schema}' must be letters and '_' only`);
const netDir = path.join(cache, 'net');
if (!fs.existsSync(path.join(netDir, 'node_modules', '@atproto', 'dev-env')))
	fail(`@atproto/dev-env is not installed in ${netDir}: run scripts/pds/install.sh`);
const require = createRequire(path.join(netDir, 'package.json'));

// The network's clock: every Date the servers make, offset by /clock.
let clockOffset = 0;
const RealDate = Date;
class NetworkDate extends RealDate {
	constructor(...a) {
		if (a.length === 0) super(RealDate.now() + clockOffset);
		else super(...a);
	}
	static now() {
		return RealDate.now() + clockOffset;
	}
}
globalThis.Date = NetworkDate;

// dev-env puts its data directories under os.tmpdir(): ours, removed at exit.
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ga-atnet-'));
process.env.TMPDIR = dataDir;
process.env.DB_POSTGRES_URL = dbUrl;
process.env.DB_POSTGRES_SCHEMA = schema;
process.env.REDIS_HOST = redis;
process.env.LOG_ENABLED = 'false';

let network = null;
const servers = [];
let stopping = false;

async function stop(code) {
	if (stopping) return;
	stopping = true;
	for (const s of servers) {
		s.closeAllConnections?.();
		s.close();
	}
	try {
		if (network) await network.close();
	} catch (e) {
		process.stderr.write(`network: closing: ${e.message}\n`);
	}
	fs.rmSync(dataDir, { recursive: true, force: true });
	process.exit(code);
}
process.on('SIGTERM', () => stop(0));
process.on('SIGINT', () => stop(0));

function readBody(req) {
	return new Promise((resolve, reject) => {
		const chunks = [];
		req.on('data', (c) => chunks.push(c));
		req.on('end', () => resolve(Buffer.concat(chunks)));
		req.on('error', reject);
	});
}

// ---- the proxy ---------------------------------------------------------------------

let hold = null; // {mode, nsid, collection}
const held = new Set(); // {req, res, upstream}
let holdsDone = 0;
const counts = {}; // NSID → requests through the proxy

function matches(h, nsid, body) {
	if (!h || h.nsid !== nsid) return false;
	if (!h.collection) return true;
	try {
		return JSON.parse(body.toString('utf8')).collection === h.collection;
	} catch {
		return false;
	}
}

function forward(pdsPort, req, body, onAnswer) {
	const headers = { ...req.headers, host: `localhost:${pdsPort}` };
	const up = http.request(
		{ host: '127.0.0.1', port: pdsPort, method: req.method, path: req.url, headers },
		(r) => {
			const chunks = [];
			r.on('data', (c) => chunks.push(c));
			r.on('end', () => onAnswer(r.statusCode, r.headers, Buffer.concat(chunks)));
			r.on('error', () => onAnswer(502, {}, Buffer.from('')));
		},
	);
	up.on('error', (e) =>
		onAnswer(502, { 'content-type': 'application/json' },
			Buffer.from(JSON.stringify({ error: 'BadGateway', message: e.message }))),
	);
	up.end(body);
}

function proxyServer(pdsPort) {
	return http.createServer(async (req, res) => {
		const body = await readBody(req);
		const nsid = (req.url.match(/^\/xrpc\/([^?]+)/) || [])[1] || '';
		counts[nsid] = (counts[nsid] || 0) + 1;
		if (hold && matches(hold, nsid, body)) {
			const h = hold;
			hold = null;
			holdsDone++;
			const entry = { req, res };
			held.add(entry);
			res.on('close', () => held.delete(entry));
			if (h.mode === 'response') forward(pdsPort, req, body, () => {});
			return; // never answered: /release closes it, or the client goes away
		}
		forward(pdsPort, req, body, (status, headers, data) => {
			if (res.destroyed) return;
			const h = { ...headers };
			delete h['transfer-encoding'];
			h['content-length'] = String(data.length);
			res.writeHead(status, h);
			res.end(data);
		});
	});
}

// ---- the control ------------------------------------------------------------------

const agents = new Map(); // handle → AtpAgent, signed in

async function agentOf(api, handle, password) {
	let a = agents.get(handle);
	if (a) return a;
	a = new api.AtpAgent({ service: network.pds.url });
	await a.login({ identifier: handle, password });
	agents.set(handle, a);
	return a;
}

function controlServer(api) {
	const routes = {
		async account(b) {
			const a = new api.AtpAgent({ service: network.pds.url });
			const r = await a.createAccount({
				handle: b.handle,
				password: b.password,
				email: `${b.handle}@example.com`,
			});
			agents.set(b.handle, a);
			return { did: r.data.did, handle: r.data.handle };
		},
		async post(b) {
			const a = await agentOf(api, b.handle, b.password);
			const rt = new api.RichText({ text: b.text });
			await rt.detectFacets(a);
			const record = {
				$type: 'app.bsky.feed.post',
				text: rt.text,
				createdAt: new Date().toISOString(),
			};
			if (rt.facets && rt.facets.length) record.facets = rt.facets;
			if (b.parent) {
				const [, repo, , rkey] = b.parent.uri.match(/^at:\/\/([^/]+)\/([^/]+)\/([^/]+)$/) || [];
				const p = await a.com.atproto.repo.getRecord({
					repo,
					collection: 'app.bsky.feed.post',
					rkey,
				});
				const root = p.data.value.reply ? p.data.value.reply.root : b.parent;
				record.reply = { root, parent: b.parent };
			}
			if (typeof b.chain === 'number') record.gaChain = b.chain;
			const r = await a.com.atproto.repo.createRecord({
				repo: a.session.did,
				collection: 'app.bsky.feed.post',
				record,
			});
			return { uri: r.data.uri, cid: r.data.cid };
		},
		async process() {
			await network.processAll(20000);
			return {};
		},
		async thread(b) {
			const a = await agentOf(api, b.handle, b.password);
			const r = await a.getPostThread({ uri: b.uri, depth: b.depth ?? 10 });
			return r.data;
		},
		async notifications(b) {
			const a = await agentOf(api, b.handle, b.password);
			const r = await a.listNotifications({ limit: 50 });
			return r.data;
		},
		async records(b) {
			const a = new api.AtpAgent({ service: network.pds.url });
			const r = await a.com.atproto.repo.listRecords({
				repo: b.repo,
				collection: b.collection,
				limit: 100,
			});
			return r.data;
		},
		async hold(b) {
			if (b.mode !== 'request' && b.mode !== 'response') throw new Error('mode: request or response');
			hold = { mode: b.mode, nsid: b.nsid, collection: b.collection || null };
			return {};
		},
		async held() {
			return { armed: !!hold, held: held.size, done: holdsDone, counts };
		},
		async release() {
			hold = null;
			for (const e of held) e.res.destroy();
			held.clear();
			return {};
		},
		async clock(b) {
			clockOffset = Number(b.offsetMs) || 0;
			return {};
		},
	};
	return http.createServer(async (req, res) => {
		const name = req.url.replace(/^\//, '');
		const send = (status, obj) => {
			const data = Buffer.from(JSON.stringify(obj));
			res.writeHead(status, { 'content-type': 'application/json', 'content-length': data.length });
			res.end(data);
		};
		if (req.method !== 'POST' || !Object.hasOwn(routes, name))
			return send(404, { error: `no control ${req.method} ${req.url}` });
		try {
			const raw = (await readBody(req)).toString('utf8');
			send(200, await routes[name](raw ? JSON.parse(raw) : {}));
		} catch (e) {
			send(500, { error: e.message || String(e) });
		}
	});
}

try {
	const dev = await import(pathToFileURL(require.resolve('@atproto/dev-env')).href);
	const api = await import(pathToFileURL(require.resolve('@atproto/api')).href);
	network = await dev.TestNetwork.create({ dbPostgresSchema: schema });
	const proxy = proxyServer(network.pds.port);
	servers.push(proxy);
	const proxyPort = await listenLoopback(proxy);
	const control = controlServer(api);
	servers.push(control);
	const controlPort = await listenLoopback(control);
	const info = {
		proxy: `http://127.0.0.1:${proxyPort}`,
		control: `http://127.0.0.1:${controlPort}`,
		pds: network.pds.url,
		appview: network.bsky.url,
		plc: network.plc.url,
	};
	writeAtomically(portFile, JSON.stringify(info) + '\n');
	process.stdout.write(`ready ${info.proxy}\n`);
} catch (e) {
	process.stderr.write(`network: could not start: ${e.stack || e.message}\n`);
	await stop(1);
}
