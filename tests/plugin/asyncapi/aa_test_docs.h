/* Contract versions served by the registry stub in the plugin and
 * integration tests: "enrol" 1.0.0 (YAML), the same version changed
 * upstream, 1.1.0 (adds an optional property) and 2.0.0 (breaking: a
 * property removed, a new required one, an enum value removed, a narrower
 * range). */
#ifndef AA_TEST_DOCS_H
#define AA_TEST_DOCS_H

#define AA_DOC_HEAD(ver, title)                                                \
  "asyncapi: 2.6.0\n"                                                          \
  "info:\n"                                                                    \
  "  title: " title "\n"                                                       \
  "  version: " ver "\n"                                                       \
  "channels:\n"                                                                \
  "  nl.edu.enrolment:\n"                                                      \
  "    publish:\n"                                                             \
  "      message:\n"                                                           \
  "        $ref: '#/components/messages/enrolled'\n"                           \
  "components:\n"                                                              \
  "  messages:\n"                                                              \
  "    enrolled:\n"                                                            \
  "      contentType: application/json\n"                                      \
  "      headers:\n"                                                           \
  "        type: object\n"                                                     \
  "        properties:\n"                                                      \
  "          ce_type: {type: string, const: nl.edu.enrolled}\n"                \
  "      payload:\n"                                                           \
  "        $ref: '#/components/schemas/Enrolment'\n"                           \
  "  schemas:\n"                                                               \
  "    Enrolment:\n"                                                           \
  "      type: object\n"

#define AA_DOC_V100                                                            \
  AA_DOC_HEAD("1.0.0", "Enrolment")                                            \
  "      required: [student]\n"                                                \
  "      properties:\n"                                                        \
  "        student:\n"                                                         \
  "          type: object\n"                                                   \
  "          required: [birthdate]\n"                                          \
  "          properties:\n"                                                    \
  "            name: {type: string}\n"                                         \
  "            birthdate: {type: string, format: date}\n"                      \
  "        level: {type: string, enum: [mbo, hbo, wo]}\n"                      \
  "        credits: {type: integer, minimum: 0, maximum: 240}\n"

/* Same version, different document: the register must flag it. */
#define AA_DOC_V100_CHANGED                                                    \
  AA_DOC_HEAD("1.0.0", "Enrolment (edited upstream)")                          \
  "      properties:\n"                                                        \
  "        student: {type: object}\n"

#define AA_DOC_V110                                                            \
  AA_DOC_HEAD("1.1.0", "Enrolment")                                            \
  "      required: [student]\n"                                                \
  "      properties:\n"                                                        \
  "        student:\n"                                                         \
  "          type: object\n"                                                   \
  "          required: [birthdate]\n"                                          \
  "          properties:\n"                                                    \
  "            name: {type: string}\n"                                         \
  "            birthdate: {type: string, format: date}\n"                      \
  "        level: {type: string, enum: [mbo, hbo, wo]}\n"                      \
  "        credits: {type: integer, minimum: 0, maximum: 240}\n"               \
  "        remark: {type: string}\n"

#define AA_DOC_V200                                                            \
  AA_DOC_HEAD("2.0.0", "Enrolment")                                            \
  "      required: [student, institution]\n"                                   \
  "      properties:\n"                                                        \
  "        student:\n"                                                         \
  "          type: object\n"                                                   \
  "          required: [birthdate]\n"                                          \
  "          properties:\n"                                                    \
  "            birthdate: {type: string, format: date}\n"                      \
  "        level: {type: string, enum: [hbo, wo]}\n"                           \
  "        credits: {type: integer, minimum: 0, maximum: 180}\n"               \
  "        institution: {type: string}\n"

#endif
