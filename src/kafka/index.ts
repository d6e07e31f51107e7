/** The Kafka port: the only way into Kafka for the rest of the code (see port.ts). */
export * from './port.js';
export { createKafka, isFencingError, authenticationFailure, isRetriableKafkaError, kafkaErrorCode, kafkaErrorName, kafkaFailure, type ClientProfile } from './client.js';
export { newReadStats, readPlanRecords, readRecordAt, lastStableOffset, CopyCounter, type DuplicateRecord } from './log-reader.js';
export { partitionFor, eventKey, parseEventKey, type EventKey } from './partitioner.js';
export { auditTopic, planTopicSpecs, ensurePlanTopics, ensureTopics, promptCompactionConfig, PLAN_KEYS_SEGMENT_MS } from './topics.js';
export { abandonedWriters, isWriterGivenUp } from './writers.js';
