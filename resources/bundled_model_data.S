/* The bytes of the bundled GGUF model, 64-byte aligned like a mapping would be. */
    .section .rodata
    .balign 64
    .global longread_bundled_model_begin
    .global longread_bundled_model_end
longread_bundled_model_begin:
    .incbin LONGREAD_BUNDLED_MODEL_PATH
longread_bundled_model_end:
    .section .note.GNU-stack,"",%progbits
