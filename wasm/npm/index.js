// onair for Node: the Bot and its helpers (bot.js, over the WebAssembly core)
// and the ready-made driver over fetch (driver.js). Types: index.d.ts, and
// types.d.ts generated from the core's Rust types.
export * from './bot.js';
export { Driver, FileStore, MemoryStore, CallbackStore } from './driver.js';
