#ifndef HUBCAST_COPENSSL_SHIM_H
#define HUBCAST_COPENSSL_SHIM_H

#include <openssl/evp.h>

/* HMAC-SHA256 through OpenSSL 3's one-shot MAC call; returns 1 on success. */
static inline int hubcast_hmac_sha256(const void *key, size_t key_len, const void *data, size_t data_len,
                                      unsigned char out[32]) {
    size_t out_len = 0;
    unsigned char *result = EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key, key_len,
                                      (const unsigned char *)data, data_len, out, 32, &out_len);
    return result != NULL && out_len == 32;
}

#endif
