export { S3RVER_CREDENTIALS, type S3TestServer, startS3Server } from "./s3-server.ts";
export { type Endpoint, TcpForwarder } from "./tcp-forwarder.ts";
