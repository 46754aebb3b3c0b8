#ifndef HUBCAST_CRDKAFKA_SHIM_H
#define HUBCAST_CRDKAFKA_SHIM_H

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

/* rd_kafka_producev is variadic and its arguments are macros: Swift can call neither.
   timestamp_ms 0: the time of the call. */
static inline rd_kafka_resp_err_t hubcast_rd_kafka_produce(
    rd_kafka_t *rk, const char *topic, int32_t partition,
    const void *key, size_t key_len, const void *value, size_t value_len,
    rd_kafka_headers_t *headers, int64_t timestamp_ms, void *opaque) {
    if (headers) {
        return rd_kafka_producev(rk,
            RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY((void *)key, key_len), RD_KAFKA_V_VALUE((void *)value, value_len),
            RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_TIMESTAMP(timestamp_ms), RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
    }
    return rd_kafka_producev(rk,
        RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_KEY((void *)key, key_len), RD_KAFKA_V_VALUE((void *)value, value_len),
        RD_KAFKA_V_TIMESTAMP(timestamp_ms), RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
}

#endif
