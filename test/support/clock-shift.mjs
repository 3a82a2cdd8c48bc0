// A wall clock that is wrong, for a real fsjob process: imported first
// (NODE_OPTIONS="--import <file URL of this module>", see clockEnv in
// test/battery/before-after.battery.ts), it moves Date.now() and `new Date()`
// and leaves the monotonic clock (performance.now, timers) alone, as a host
// whose clock is set wrong or jumps does. Plain JavaScript so that any
// fsjob, old or new, built or run through tsx, can import it.
//
// FSJOB_TEST_CLOCK_OFFSET_MS   milliseconds added from the start (3600000: an hour ahead)
// FSJOB_TEST_CLOCK_JUMP_MS     milliseconds added once FSJOB_TEST_CLOCK_JUMP_WHEN exists
// FSJOB_TEST_CLOCK_JUMP_WHEN   a path, looked for every 10 ms (the jump comes after an
//                              event the test names, such as end.1.json being published)
import { existsSync } from 'node:fs';

const RealDate = Date;
const realNow = RealDate.now.bind(RealDate);
let offset = Number(process.env.FSJOB_TEST_CLOCK_OFFSET_MS ?? '0') || 0;

class ShiftedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(realNow() + offset);
    else super(...args);
  }
  static now() {
    return realNow() + offset;
  }
}
globalThis.Date = ShiftedDate;

const when = process.env.FSJOB_TEST_CLOCK_JUMP_WHEN;
const jump = Number(process.env.FSJOB_TEST_CLOCK_JUMP_MS ?? '0') || 0;
if (when !== undefined && when !== '' && jump !== 0) {
  const poll = setInterval(() => {
    if (!existsSync(when)) return;
    offset += jump;
    clearInterval(poll);
  }, 10);
  poll.unref();
}
