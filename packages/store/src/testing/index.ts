export { FaultyS3Proxy, type RefusalStatus, type RefusePlan } from "./faulty-s3-proxy.ts";
export { S3RVER_CREDENTIALS, type S3TestServer, startS3Server } from "./s3-server.ts";
export { type Endpoint, TcpForwarder } from "./tcp-forwarder.ts";
