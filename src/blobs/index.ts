export * from './blob.js';
export { BlobReader, resolvePayloads, type BlobReaderOptions } from './reader.js';
