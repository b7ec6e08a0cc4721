/**
 * Bench-only preload (`node --import ./dist/bench/alloc-preload.js`, added by
 * bench/targets.ts to every server it starts when `BENCH_ALLOC_DIR` is set):
 * counts the bytes the process allocates on its JavaScript heap between two
 * `SIGUSR2` signals. Inert until the first signal.
 *
 * The first signal starts a `v8.GCProfiler`, which records the heap
 * statistics before and after every garbage collection; the second stops it.
 * Between two collections the used heap grows only by allocation, so
 *
 *   allocated = Σ over the collections of (used before it − used after the
 *               previous one, or at the start) + (used at the end − used
 *               after the last one)
 *
 * Each signal is acknowledged by writing `<BENCH_ALLOC_DIR>/<pid>.json`
 * (`{"state":"started"}`, then the result). With `BENCH_ALLOC_SAMPLING=1` the
 * sampling heap profiler runs over the same window too (keeping the samples of
 * collected objects), and the result carries its estimate of the same total,
 * to check the method against; the samples are kept beside it as
 * `<pid>.heapprofile`.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import { GCProfiler, getHeapStatistics } from 'node:v8';

export interface AllocResult {
  state: 'stopped';
  /** Bytes allocated on the JS heap over the window. */
  allocated: number;
  gcs: number;
  seconds: number;
  /** The sampling heap profiler's estimate over the same window, when asked for. */
  sampled?: number;
}

interface HeapStats {
  usedHeapSize: number;
}
interface GcEntry {
  beforeGC: { heapStatistics: HeapStats };
  afterGC: { heapStatistics: HeapStats };
}
interface SamplingNode {
  selfSize: number;
  children: SamplingNode[];
}

const dir = process.env.BENCH_ALLOC_DIR;
const sampling = process.env.BENCH_ALLOC_SAMPLING === '1';

function write(data: unknown): void {
  const file = join(dir!, `${process.pid}.json`);
  writeFileSync(`${file}.tmp`, JSON.stringify(data));
  renameSync(`${file}.tmp`, file);
}

const total = (n: SamplingNode): number => n.children.reduce((sum, c) => sum + total(c), n.selfSize);

if (dir) {
  let profiler: GCProfiler | undefined;
  let session: Session | undefined;
  let usedAtStart = 0;
  let startedAt = 0;

  /** Stops the GC profiler and sums up (before the sampling profile, whose answer allocates, is read). */
  const stop = (): AllocResult => {
    const { statistics } = profiler!.stop() as unknown as { statistics: GcEntry[] };
    const usedAtEnd = getHeapStatistics().used_heap_size;
    profiler = undefined;
    let previous = usedAtStart;
    let allocated = 0;
    for (const gc of statistics) {
      allocated += gc.beforeGC.heapStatistics.usedHeapSize - previous;
      previous = gc.afterGC.heapStatistics.usedHeapSize;
    }
    allocated += usedAtEnd - previous;
    return { state: 'stopped', allocated, gcs: statistics.length, seconds: (performance.now() - startedAt) / 1000 };
  };

  process.on('SIGUSR2', () => {
    if (!profiler) {
      const begin = () => {
        profiler = new GCProfiler();
        startedAt = performance.now();
        usedAtStart = getHeapStatistics().used_heap_size;
        profiler.start();
        write({ state: 'started' });
      };
      if (!sampling) return begin();
      session ??= new Session();
      session.connect();
      session.post(
        'HeapProfiler.startSampling',
        { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true },
        (err) => (err ? write({ state: 'error', error: String(err) }) : begin()),
      );
      return;
    }
    const result = stop();
    if (!session) return write(result);
    const s = session;
    s.post('HeapProfiler.stopSampling', (err, res) => {
      const profile = err ? undefined : (res as { profile: { head: SamplingNode } }).profile;
      const sampled = profile ? total(profile.head) : NaN;
      // The samples themselves, for a closer look (DevTools opens `.heapprofile` files).
      if (profile) writeFileSync(join(dir, `${process.pid}.heapprofile`), JSON.stringify(profile));
      s.disconnect();
      write({ ...result, sampled });
    });
  });
}
