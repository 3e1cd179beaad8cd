// scripts/pds/launch.mjs — what the launchers (pds.mjs, network.mjs) share:
// their command line, failing with one line, listening on loopback, and
// the port file written atomically.
import fs from 'node:fs';

// Prints "<who>: <msg>" on stderr and exits 1.
export function fail(who, msg) {
	process.stderr.write(`${who}: ${msg}\n`);
	process.exit(1);
}

// The value after --name on the command line, or null.
export function arg(name) {
	const i = process.argv.indexOf(name);
	return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : null;
}

// Listens on 127.0.0.1 on a port the system chooses; resolves to the port.
export function listenLoopback(server) {
	return new Promise((resolve, reject) => {
		server.once('error', reject);
		server.listen(0, '127.0.0.1', () => resolve(server.address().port));
	});
}

// Writes text to path atomically (path.tmp, then rename): a reader never
// sees half of it.
export function writeAtomically(path, text) {
	const tmp = `${path}.tmp`;
	fs.writeFileSync(tmp, text);
	fs.renameSync(tmp, path);
}
