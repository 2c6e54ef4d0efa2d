// OpenSSL 3 (libssl, libcrypto) for Swift: DTLS for MediaDTLS, HMAC and digests for MediaSTUN. Most of
// the API imports as is; static-inline shims below cover what is a macro in the headers.
#ifndef SLUICE_CSSL_SHIM_H
#define SLUICE_CSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/x509.h>
#include <openssl/bio.h>
#include <openssl/rand.h>

#endif
