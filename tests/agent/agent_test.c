/* The chat methods through the in-process client: a real server, a scripted
 * LLM server (mock_llm.py) in a child process on 127.0.0.1. What the
 * notifications say, in which order relative to the answers, and the
 * configuration errors that must not make any request. */
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_client.h"

extern char **environ;

typedef struct mock {
    pid_t pid;
    int port;
    char dir[64];
} mock;

/* Starts mock_llm.py with the script; reads the port it prints. */
static void mock_start(mock *m, const char *script_json)
{
    snprintf(m->dir, sizeof m->dir, "/tmp/ecpd-agent-c-XXXXXX");
    assert_non_null(mkdtemp(m->dir));
    char script[128];
    snprintf(script, sizeof script, "%s/script.json", m->dir);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fputs(script_json, f);
    fclose(f);
    int out[2];
    assert_int_equal(pipe(out), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    char *argv[] = {PYTHON3, MOCK_LLM, script, NULL};
    assert_int_equal(posix_spawn(&m->pid, PYTHON3, &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    FILE *in = fdopen(out[0], "r");
    char line[64] = "";
    assert_non_null(fgets(line, sizeof line, in));
    fclose(in);
    assert_int_equal(sscanf(line, "PORT %d", &m->port), 1);
}

static void mock_stop(mock *m)
{
    kill(m->pid, SIGTERM);
    waitpid(m->pid, NULL, 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", m->dir);
    assert_int_equal(system(cmd), 0);
}

static void clear_provider_env(void)
{
    const char *vars[] = {"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
                          "OLLAMA_HOST", "ECPD_MODEL"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

/* Runs the loop until a chat/contentReceived says the turn finished. */
static void wait_turn(test_server *s, test_client *c)
{
    for (int waited = 0; waited < 10000; waited += 10) {
        size_t n = test_client_notification_count(c, "chat/contentReceived");
        for (size_t i = 0; i < n; i++)
            if (strstr(test_client_notification(c, "chat/contentReceived", i), "\"state\":\"finished\""))
                return;
        test_server_run_for(s, 10);
    }
    fail_msg("the turn did not finish");
}

static void no_provider_is_an_error_without_a_request(void **state)
{
    (void)state;
    clear_provider_env();
    test_server *s = test_server_new(NULL);
    test_client *c = test_client_connect(s);
    char *out = NULL;
    assert_int_equal(test_client_request(c, "initialize", "{}", NULL), 0);
    assert_int_equal(test_client_request(c, "chat/prompt", "{\"message\":\"hi\"}", &out), -32603);
    char *message = test_json_string(out, "message");
    assert_non_null(strstr(message, "OPENAI_API_KEY"));
    assert_non_null(strstr(message, "ANTHROPIC_API_KEY"));
    assert_non_null(strstr(message, "OLLAMA_HOST"));
    assert_int_equal(test_client_notification_count(c, "chat/"), 0);
    free(message);
    free(out);
    /* bad params are -32602 and name the field */
    assert_int_equal(test_client_request(c, "chat/prompt", "{}", &out), -32602);
    assert_non_null(strstr(out, "message"));
    free(out);
    assert_int_equal(test_client_request(c, "chat/promptStop", "{\"chatId\":\"nope\"}", &out), -32602);
    free(out);
    /* the method table lists the namespace */
    assert_int_equal(test_client_request(c, "ecp/methods", "{\"namespace\":\"chat\"}", &out), 0);
    assert_int_equal(test_json_length(out, "methods"), 9);
    free(out);
    test_client_disconnect(c);
    test_server_free(s);
}

static void a_turn_streams_after_its_answer(void **state)
{
    (void)state;
    mock m;
    mock_start(&m, "[{\"tools\":[{\"id\":\"call_1\",\"name\":\"list_directory\",\"arguments\":[\"{\\\"path\\\":\","
                   "\"\\\".\\\"}\"]}]}, {\"text\":[\"It has \",\"a.txt\"]}]");
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%d/v1", m.port);
    clear_provider_env();
    setenv("OPENAI_API_KEY", "sk-c", 1);
    setenv("OPENAI_BASE_URL", base, 1);
    char ws[96];
    snprintf(ws, sizeof ws, "%s/ws", m.dir);
    mkdir(ws, 0700);
    char file[128];
    snprintf(file, sizeof file, "%s/a.txt", ws);
    FILE *f = fopen(file, "w");
    fputs("x\n", f);
    fclose(f);
    test_server_options o = {.workspace = ws};
    test_server *s = test_server_new(&o);
    test_client *c = test_client_connect(s);
    assert_int_equal(test_client_request(c, "initialize", "{}", NULL), 0);
    test_client_clear_notifications(c);
    char *out = NULL;
    assert_int_equal(test_client_request(c, "chat/prompt", "{\"chatId\":\"c1\",\"message\":\"list\"}", &out), 0);
    assert_string_equal(out, "{\"chatId\":\"c1\",\"model\":\"openai/gpt-4.1\",\"status\":\"prompting\"}");
    free(out);
    /* the answer goes out before any of the turn's content */
    const char *log = test_client_event_log(c);
    assert_int_equal(strncmp(log, "#", 1), 0);
    wait_turn(s, c);
    size_t n = test_client_notification_count(c, "chat/contentReceived");
    char *texts = calloc(1, 4096), *types = calloc(1, 4096);
    for (size_t i = 0; i < n; i++) {
        const char *note = test_client_notification(c, "chat/contentReceived", i);
        char *type = test_json_string(note, "content.type");
        strcat(types, type);
        strcat(types, ",");
        if (strcmp(type, "text") == 0) {
            char *t = test_json_string(note, "content.text");
            strcat(texts, t);
            free(t);
        }
        if (strcmp(type, "toolCalled") == 0) {
            char *output = test_json_string(note, "content.outputs[0].text");
            assert_string_equal(output, "a.txt\n");
            free(output);
        }
        free(type);
    }
    assert_string_equal(texts, "It has a.txt");
    assert_non_null(strstr(types, "progress,toolCallPrepare,"));
    assert_non_null(strstr(types, "toolCallRun,toolCallRunning,toolCalled,"));
    assert_non_null(strstr(types, "text,text,usage,progress,"));
    free(texts);
    free(types);
    assert_int_equal(test_client_request(c, "chat/list", "{}", &out), 0);
    assert_int_equal(test_json_length(out, "chats"), 1);
    int64_t count = 0;
    assert_true(test_json_int(out, "chats[0].messageCount", &count));
    assert_int_equal(count, 4);
    free(out);
    test_client_disconnect(c);
    test_server_free(s);
    mock_stop(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_provider_is_an_error_without_a_request),
        cmocka_unit_test(a_turn_streams_after_its_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
