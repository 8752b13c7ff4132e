// A process that stages an upload and then waits, for the staging test to kill (SIGKILL) as a
// crash would: it opens the disk media store at argv[2], writes MB megabytes into a staged file,
// prints "staged" and stays alive until killed. Not a test file itself.
import { openDiskMediaStore } from '../../src/domain/media/media-store.ts';

const store = await openDiskMediaStore(process.argv[2]!);
const staged = await store.stage();
for (let i = 0; i < Number(process.env.MB ?? 1); i++) await staged.write(Buffer.alloc(1024 * 1024, 7));
process.stdout.write('staged\n');
setInterval(() => {}, 60_000);
