/*
 * atp_fuzz — the parsers of outside input in adapters/atproto: facet
 * detection over post text (and the record built from it), at:// URIs,
 * JWT payloads, reply refs and records from JSON, and the classification
 * of an XRPC error body. Each must terminate, stay in bounds, and keep its
 * own invariants (facet ranges inside the text, ordered, non-empty).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/atproto/atproto.h"
#include "adapters/atproto/post.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 8192)
		return 0;
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';

	struct atp_facets fs;
	atp_facets_detect(s, size, &fs);
	for (size_t i = 0; i < fs.n; i++) {
		if (fs.items[i].byte_start >= fs.items[i].byte_end || fs.items[i].byte_end > size)
			abort();
		atp_facets_set_did(&fs, fs.items[i].value, "did:plc:fuzz");
	}
	struct atp_post_in in = {.text = s, .text_len = size, .facets = &fs, .chain = 1};
	cJSON *rec = atp_post_record(&in, NULL);
	cJSON_Delete(rec);
	cJSON *fj = atp_facets_json(&fs);
	cJSON_Delete(fj);
	atp_facets_free(&fs);

	char did[ATP_DID_MAX], coll[128], rkey[ATP_RKEY_MAX];
	atp_uri_parse(s, did, sizeof did, coll, sizeof coll, rkey, sizeof rkey, NULL);
	free(atp_post_web_url(s));
	(void)atp_jwt_exp_ms(s);
	(void)atp_valid_did(s);
	(void)atp_valid_handle(s);

	cJSON *j = cJSON_ParseWithLength(s, size);
	struct atp_reply_ref ref;
	atp_reply_ref_from_json(j, &ref, NULL);
	struct atp_strong_ref parent = {"at://did:plc:p/app.bsky.feed.post/3kp", "bafyreiparent1"};
	atp_reply_ref_for(&parent, j, &ref, NULL);
	(void)atp_record_chain(j);
	(void)atp_record_key(j);
	cJSON_Delete(j);

	bool auth, rate;
	char xe[ATP_XRPC_ERROR_MAX], msg[GA_ERR_MSG_MAX];
	atp_classify(400, NULL, s, size, "fuzz", NULL, &auth, &rate, xe, msg, sizeof msg);
	free(s);
	return 0;
}
