export * from './blob.js';
export { BlobReader, type BlobReaderOptions } from './reader.js';
