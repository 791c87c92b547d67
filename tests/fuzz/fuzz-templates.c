/*
 * fuzz-templates.c: CONTAINERS_TEMPLATES as the daemon reads it
 * (container_config_template, container_config_allowed).  A template
 * found fills the request with an image that is a valid name and the
 * request's own image is never replaced; a refusal says why.
 * seeds: tests/fuzz/seeds/templates/
 */

#include "fuzz.h"

/* Asks for template name against the config now set. */
static void
fuzz_one(const char *name)
{
	struct jobreq	 r;
	json_t		*o, *img;
	char		*cause = NULL;

	/* (a name that is not UTF-8 is no JSON string: no request) */
	if ((o = json_pack("{s:s,s:[s]}", "template", name, "argv",
	    "true")) == NULL)
		return;
	if (container_config_template(o, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL && strncmp(cause, "template: ",
		    10) == 0);
		free(cause);
		json_decref(o);
		return;
	}
	img = json_object_get(o, "image");
	FUZZ_ASSERT(json_is_string(img));
	FUZZ_ASSERT(jobspec_image_ok(json_string_value(img), &cause) == 0);
	jobreq_init(&r);
	if (jobreq_from_json(o, &r, &cause) == 0) {
		/* its own template's image is always offered */
		FUZZ_ASSERT(container_config_allowed(&r, &cause) == 0);
	} else
		free(cause);
	jobreq_clear(&r);
	json_decref(o);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	*text, *name, *eq;

	text = xstrndup((const char *)data, size);
	setenv("GMUX_CONTAINERS_TEMPLATES", text, 1);
	setenv("GMUX_CONTAINERS_ALLOW_OWN_IMAGES", "0", 1);
	fuzz_one("dev");
	/* the first entry's name, as the text has it */
	name = text + strspn(text, " \t");
	if ((eq = strchr(name, '=')) != NULL) {
		*eq = '\0';
		fuzz_one(name);
	}
	free(text);
	return (0);
}
